/**
 * The refused-keys memory on its own, with a plain function as the upstream: what it keeps of a 401
 * (the status, and the Error body scrubbed of the key, then cut), and its bounds in count and in
 * bytes. Against a real process, 45 keys refused with 7 MB bodies are in test/system/memory-bounds.test.ts.
 */

import { describe, expect, it } from 'vitest';
import { keyIdOf } from '../../../../src/gateway/shared/key-id.js';
import type { UpstreamCall } from '../../../../src/gateway/upstream/pipeline.js';
import type { UpstreamResponse } from '../../../../src/gateway/upstream/response.js';
import { rejectedKeys } from '../../../../src/gateway/upstream/stages/rejected-keys.js';
import { upstreamCall } from '../../../helpers/upstream-call.js';

const KEY = 'sk_live_0123456789abcdefghijklmnopq';

const call = (key: string) => upstreamCall({ key, keyId: keyIdOf(key) });

function refusing(body: (key: string) => string) {
  const asked: string[] = [];
  const next = async (c: UpstreamCall): Promise<UpstreamResponse> => {
    asked.push(c.key);
    return { status: 401, headers: { 'www-authenticate': 'Bearer' }, body: body(c.key) };
  };
  return { asked, next };
}

describe('rejectedKeys', () => {
  it('keeps a refusal as its status and Error body, the key scrubbed from the whole before each string is cut', async () => {
    // The key echoed after 470 characters: cut at 500 first, 30 of its 34 characters would be kept.
    const upstream = refusing((key) =>
      JSON.stringify({
        code: `unauthorized ${key} ${'c'.repeat(5_000)}`,
        message: `${'m'.repeat(470)}${key}`,
        status: 401,
      }),
    );
    const send = rejectedKeys()(upstream.next);
    const first = await send(call(KEY));
    const again = await send(call(KEY));
    expect(again).toBe(first);
    expect(upstream.asked).toHaveLength(1);
    expect(first.status).toBe(401);
    expect(first.headers).toEqual({});
    const body = JSON.parse(first.body) as { code: string; message: string; status: number };
    expect(body.status).toBe(401);
    expect(body.code).toHaveLength(100);
    expect(body.code.startsWith('unauthorized [redacted] ccc')).toBe(true);
    expect(body.message).toBe(`${'m'.repeat(470)}[redacted]`);
    expect(first.body).not.toContain(KEY.slice(0, 8));
  });

  it('keeps nothing of a body that is not the spec’s Error', async () => {
    const upstream = refusing(() => `<html>${'x'.repeat(10_000)}</html>`);
    const send = rejectedKeys()(upstream.next);
    expect(await send(call(KEY))).toEqual({ status: 401, headers: {}, body: '' });
  });

  it('keeps of a 7 MB refusal its status alone, and of a long message its first 500 characters', async () => {
    const huge = 'x'.repeat(7 * 1024 * 1024);
    const upstream = refusing(() => `{"code":"unauthorized","message":"${huge}","status":401}`);
    expect(await rejectedKeys()(upstream.next)(call(KEY))).toEqual({ status: 401, headers: {}, body: '' });
    const long = refusing(() => `{"code":"unauthorized","message":"${'x'.repeat(60_000)}","status":401}`);
    const kept = await rejectedKeys()(long.next)(call(KEY));
    expect(kept.body).toBe(JSON.stringify({ code: 'unauthorized', message: `${'x'.repeat(499)}…`, status: 401 }));
  });

  it('drops the oldest refusal past its bytes, and past its count', async () => {
    const upstream = refusing(() => JSON.stringify({ code: 'unauthorized', message: 'm'.repeat(500), status: 401 }));
    // Each refusal costs a little over 800 bytes as counted: 10 fit in 8 KB.
    const send = rejectedKeys({ maxBytes: 8 * 1024, maxKeys: 1_000 })(upstream.next);
    for (let i = 0; i < 20; i++) await send(call(`key-${i}`));
    upstream.asked.length = 0;
    await send(call('key-19'));
    expect(upstream.asked).toEqual([]);
    await send(call('key-0'));
    expect(upstream.asked).toEqual(['key-0']);

    const counted = refusing(() => '');
    const few = rejectedKeys({ maxKeys: 2 })(counted.next);
    for (const key of ['a', 'b', 'c', 'a']) await few(call(key));
    expect(counted.asked).toEqual(['a', 'b', 'c', 'a']);
  });

  it('asks again once a refusal is older than its time, and passes every other answer through untouched', async () => {
    let now = 0;
    const upstream = refusing(() => '');
    const send = rejectedKeys({ ttlMs: 1_000, now: () => now })(upstream.next);
    await send(call(KEY));
    now = 1_000;
    await send(call(KEY));
    expect(upstream.asked).toHaveLength(2);
    const ok: UpstreamResponse = { status: 200, headers: { link: 'x' }, body: '[]' };
    expect(await rejectedKeys()(async () => ok)(call(KEY))).toBe(ok);
  });
});
