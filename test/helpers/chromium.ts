/**
 * A real headless Chromium (Debian's package; CHROMIUM_PATH to use another), started by us with a
 * fresh profile and driven over the DevTools protocol by playwright-core, which downloads no
 * browser of its own. Stopped by its pid; every process of its profile is checked gone.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/** Why the browser checks cannot run here, or undefined when they can. */
export function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM_PATH)) return undefined;
  return `no Chromium at ${CHROMIUM_PATH}: apt-get install -y chromium (or set CHROMIUM_PATH)`;
}

export interface Chromium {
  readonly browser: Browser;
  readonly pid: number;
  close(): Promise<void>;
}

/**
 * No background traffic of the browser's own, and no name resolves except loopback. No startup
 * window, as Playwright's own launcher does: with Chromium 156 the new-tab page it would open raced
 * connectOverCDP, which waits for every open page to initialise, and the connect hung until its
 * timeout in about one start in five (Node 20 and 24 alike). Tests open their pages in a context of
 * their own.
 */
const FLAGS = [
  '--headless',
  '--no-startup-window',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1',
  '--window-size=1280,900',
];

export async function launchChromium(): Promise<Chromium> {
  const profile = await mkdtemp(join(tmpdir(), 'petstore-chromium-'));
  const child = spawn(CHROMIUM_PATH, [...FLAGS, `--user-data-dir=${profile}`, '--remote-debugging-port=0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    // Chromium makes its singleton socket's folder under TMPDIR, and leaves it behind: inside the
    // profile, it goes with it.
    env: { ...process.env, TMPDIR: profile },
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${CHROMIUM_PATH}`);
  const stop = () => stopChromium(child, pid, profile);
  try {
    const endpoint = await devToolsEndpoint(child);
    // Generous: under a full parallel test run the browser can take a while to answer its first commands.
    const browser = await chromium.connectOverCDP(endpoint, { timeout: 90_000 });
    return {
      browser,
      pid,
      async close() {
        await browser.close();
        await stop();
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Chromium prints "DevTools listening on ws://…" on stderr once it accepts a client. */
function devToolsEndpoint(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`Chromium gave no DevTools endpoint in 20 s:\n${stderr}`)), 20_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Chromium exited (${code}) before it listened:\n${stderr}`));
    });
  });
}

async function stopChromium(child: ChildProcess, pid: number, profile: string): Promise<void> {
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  process.kill(pid, 'SIGTERM');
  const timer = setTimeout(() => child.exitCode === null && process.kill(pid, 'SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
  // Renderers and helpers leave with the browser; wait for every process that names our profile.
  const deadline = Date.now() + 5_000;
  while ((await processesUsing(profile)).length > 0) {
    if (Date.now() > deadline)
      throw new Error(`Chromium processes outlived the browser: ${await processesUsing(profile)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await rm(profile, { recursive: true, force: true });
}

/** Pids whose command line mentions `text` (Linux /proc). */
async function processesUsing(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      if ((await readFile(`/proc/${entry}/cmdline`, 'utf8')).includes(text)) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}
