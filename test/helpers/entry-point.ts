/** The gateway's real entry point as the system tests start it: from the checkout, through tsx, no build. */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { checkedPid, type Exit, killTree, trackedEnv } from './processes.js';

/** The checkout's root, where package.json and src/ are. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Node's arguments that run src/main.ts as it is (a build would rewrite the dist/ other tests run). */
export const MAIN = ['--import', 'tsx', 'src/main.ts'];
/** The line the entry point prints once it listens, with its URL. */
export const READY = /Pet Store GraphQL gateway ready at (\S+)/;

export interface Finished extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the entry point with only `env` (and PATH) until it exits; killed, and failing, after `ms`. */
export async function runToExit(env: Record<string, string>, ms = 30_000): Promise<Finished> {
  const child = spawn(process.execPath, MAIN, {
    cwd: ROOT,
    env: trackedEnv({ PATH: process.env.PATH ?? '', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = checkedPid(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  // 'close' rather than 'exit': every byte written to the pipes has been read by then.
  const closed = new Promise<Exit>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  const outcome = await Promise.race([closed, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    await killTree(pid);
    throw new Error(`src/main.ts still running after ${ms} ms:\n${stdout}${stderr}`);
  }
  return { ...outcome, stdout, stderr };
}

/** stderr as lines, without the empty one after the last newline. */
export function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

export function expectOneLineFailure(run: Finished, names: RegExp): void {
  expect(run.code).toBe(1);
  expect(lines(run.stderr)).toHaveLength(1);
  expect(run.stderr).toMatch(names);
  expect(run.stderr).toMatch(/^gateway: /);
  expect(`${run.stdout}${run.stderr}`).not.toMatch(/\n\s+at |Error:/);
  expect(run.stdout).not.toMatch(READY);
}
