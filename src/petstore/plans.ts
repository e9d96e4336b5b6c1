/** Plans of the spec's "Rate limits per plan" table, and the key list of `PETSTORE_KEYS`. */

export type PlanName = 'free' | 'pro' | 'business' | 'enterprise';

/** Requests allowed per minute window and per day window. */
export interface PlanLimits {
  readonly perMinute: number;
  readonly perDay: number;
}

export const PLANS: Readonly<Record<PlanName, PlanLimits>> = Object.freeze({
  free: { perMinute: 60, perDay: 1_000 },
  pro: { perMinute: 300, perDay: 10_000 },
  business: { perMinute: 1_000, perDay: 100_000 },
  // "custom" in the spec: this is what a key says `enterprise` without its own numbers gets.
  enterprise: { perMinute: 10_000, perDay: 1_000_000 },
});

export interface KeySpec {
  readonly plan: PlanName;
  readonly limits: PlanLimits;
}

const KEY_ENTRY = /^([A-Za-z0-9._~+/-]{1,200}=*):(free|pro|business|enterprise)(?:=([0-9]+)\/([0-9]+))?$/;

/**
 * Parses `key:plan,…` (an enterprise key may carry its own limits: `key:enterprise=5000/200000`).
 * Throws an Error naming the bad entry, without echoing anything that looks like a whole key.
 */
export function parseKeys(text: string): Map<string, KeySpec> {
  const keys = new Map<string, KeySpec>();
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  entries.forEach((entry, index) => {
    const match = KEY_ENTRY.exec(entry);
    if (!match) {
      throw new Error(
        `PETSTORE_KEYS entry ${index + 1} is not key:plan (plan: free, pro, business, enterprise or enterprise=M/D)`,
      );
    }
    const [, key, plan, perMinute, perDay] = match as unknown as [string, string, PlanName, string?, string?];
    if (perMinute !== undefined && plan !== 'enterprise') {
      throw new Error(`PETSTORE_KEYS entry ${index + 1}: only the enterprise plan takes custom limits`);
    }
    const limits = perMinute && perDay ? { perMinute: Number(perMinute), perDay: Number(perDay) } : PLANS[plan];
    if (limits.perMinute < 1 || limits.perDay < 1) {
      throw new Error(`PETSTORE_KEYS entry ${index + 1}: limits must be at least 1`);
    }
    keys.set(key, { plan, limits });
  });
  if (keys.size === 0) throw new Error('PETSTORE_KEYS names no key (expected key:plan,…)');
  return keys;
}
