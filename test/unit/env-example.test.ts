/**
 * .env.example lists every variable the gateway's configuration reads, each with its real default,
 * and so does the README's configuration table: adding a variable without documenting it fails here.
 */

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

/** The names parseConfig reads, found by handing it an environment that records every lookup. */
function variablesRead(): string[] {
  const names = new Set<string>();
  for (const base of [{}, { NODE_ENV: 'production' }] as Record<string, string>[]) {
    const recording = new Proxy(base, {
      get(target, name) {
        if (typeof name === 'string') names.add(name);
        return target[name as string];
      },
    });
    parseConfig(recording);
  }
  return [...names].sort();
}

/** The `#NAME=value` lines of .env.example, uncommented. */
function exampleDefaults(): Record<string, string> {
  const entries = [...read('.env.example').matchAll(/^#([A-Z][A-Z0-9_]*)=(.*)$/gm)];
  return Object.fromEntries(entries.map((match) => [match[1] as string, match[2] as string]));
}

describe('.env.example', () => {
  it('lists every variable the configuration reads, and nothing else', () => {
    expect(Object.keys(exampleDefaults()).sort()).toEqual(variablesRead());
  });

  it('shows the real defaults: uncommented as it is, it changes nothing', () => {
    expect(parseConfig(exampleDefaults())).toEqual(parseConfig({}));
  });

  it('gives each variable a comment line', () => {
    const lines = read('.env.example').split('\n');
    lines.forEach((line, index) => {
      if (/^#[A-Z]/.test(line)) expect(lines[index - 1], line).toMatch(/^# \S/);
    });
  });
});

describe('README configuration table', () => {
  it('has a row for every variable the configuration reads', () => {
    const rows = new Set([...read('README.md').matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1]));
    expect(variablesRead().filter((name) => !rows.has(name))).toEqual([]);
  });
});
