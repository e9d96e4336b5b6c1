/**
 * Graceful shutdown of the real entry point (`node --import tsx src/main.ts`, PORT=0) in front of an
 * upstream that holds its answer until the test releases it: on SIGTERM or SIGINT a request in
 * flight still completes with its data, new connections are refused while it is in flight, and the
 * process exits with code 0 well within its deadline. Every step waits on an event, not a timer,
 * so a busy machine only makes it slower.
 *
 * Two tests reproduce how answers were lost, with the default configuration and an upstream that
 * creates each pet on arrival and answers seconds later: requests that take longer than a fixed
 * 10 s grace (they wait for budget, then for the upstream), and `npm start` stopped by a signal to
 * its process group, which reaches the gateway twice (from the sender, and forwarded by npm).
 * `npm start` is the real npm running package.json's start script, in a scratch folder whose
 * dist/main.js imports src/main.ts (tsx preloaded): a build would rewrite the dist/ other tests use.
 */

import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptQueueReader } from '../../src/gateway/observability/accept-queue.js';
import { gql } from '../helpers/gql.js';
import { answer, type Behaviour, startHostileUpstream } from '../helpers/hostile-upstream.js';
import {
  checkedPid,
  descendants,
  killTree,
  signalGroup,
  startUntil,
  stopProcess,
  waitGone,
} from '../helpers/processes.js';
import { sendRaw, startUpstream, UPSTREAM_KEY, type Upstream } from '../helpers/upstream.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Well inside SHUTDOWN_GRACE (25 s by default): the drain waits for the request, not for a timer. */
const EXIT_WITHIN_MS = 10_000;

interface Main {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

/** Spawns the entry point with a clean environment and waits for its "ready at <url>" line. */
function startMain(env: Record<string, string>): Promise<Main> {
  return startReady(process.execPath, ['--import', 'tsx', 'src/main.ts'], ROOT, env);
}

/**
 * `npm start` from a scratch folder: package.json's own start script, its dist/main.js importing
 * src/main.ts. npm leads a process group of its own (detached), as under a terminal or supervisor.
 */
async function startNpm(env: Record<string, string>, folder: string): Promise<Main> {
  const project = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  await mkdir(join(folder, 'dist'));
  await symlink(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
  await writeFile(
    join(folder, 'package.json'),
    JSON.stringify({ name: 'start-script', private: true, type: 'module', scripts: { start: project.scripts.start } }),
  );
  await writeFile(join(folder, 'dist', 'main.js'), `await import(${JSON.stringify(join(ROOT, 'src', 'main.ts'))});\n`);
  return startReady('npm', ['start', '--silent'], folder, { HOME: process.env.HOME ?? '', ...env }, true);
}

async function startReady(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
  detached = false,
): Promise<Main> {
  const started = await startUntil(command, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    ready: /Pet Store GraphQL gateway ready at (\S+)/,
    timeoutMs: 30_000,
    detached,
  });
  const url = started.ready[1] as string;
  return { child: started.child, url, port: Number(new URL(url).port), exited: started.exited, output: started.output };
}

/**
 * An upstream that creates each pet on arrival and answers `afterMs` later, as one that is slow
 * to answer (or far away) does; `created()` counts the pets it made.
 */
function createsOnArrival(afterMs: number): { behaviour: Behaviour; created(): number } {
  let created = 0;
  return {
    created: () => created,
    behaviour: (req, res) => {
      if (req.method !== 'POST') return answer(res, 404, '{"code":"not_found","message":"no","status":404}');
      const id = ++created;
      setTimeout(() => answer(res, 201, `{"id":${id},"name":"Rex","categoryId":1,"status":"available"}`), afterMs);
    },
  };
}

/** `count` createPets at once: each settles as "acknowledged" (a pet), an error code, or "reset" (no answer). */
function createPets(url: string, count: number): Promise<string[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      gql(url, `mutation { createPet(input: { name: "Rex ${i}", categoryId: "1" }) { pet { id } } }`).then(
        (response) => String(response.body.errors?.[0]?.extensions?.code ?? 'acknowledged'),
        () => 'reset',
      ),
    ),
  );
}

function tally(outcomes: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1;
  return counts;
}

/** Whether a TCP connection to the port is refused (nothing listens any more). */
function isRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

async function until(condition: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return condition();
}

describe('graceful shutdown of src/main.ts', () => {
  let main: Main | undefined;
  let upstream: Upstream | undefined;

  afterEach(async () => {
    if (main?.child.pid !== undefined) await stopProcess(main.child.pid, 'SIGKILL');
    await upstream?.close();
    main = undefined;
    upstream = undefined;
  });

  it('drains on a SIGTERM that comes right after the ready line, while start-up still checks the upstream', async () => {
    // An upstream whose accept queue is full (its process stopped): a connection to it hangs, so
    // the start-up check after the ready line takes its whole 3 s. A signal in those seconds used
    // to find no handler, and killed the gateway.
    const full = await startUntil(
      process.execPath,
      [
        '-e',
        "const s = require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, () => console.log('port ' + s.address().port));",
      ],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '' }, ready: /port (\d+)/, timeoutMs: 30_000 },
    );
    try {
      const port = Number(full.ready[1]);
      process.kill(full.pid, 'SIGSTOP');
      const fillers = Array.from({ length: 3 }, () => connect({ host: '127.0.0.1', port }).on('error', () => {}));
      main = await startMain({
        PORT: '0',
        PETSTORE_BASE_URL: `http://127.0.0.1:${port}/v1`,
        PETSTORE_API_KEY: UPSTREAM_KEY,
      });
      main.child.kill('SIGTERM');
      expect(await main.exited).toEqual({ code: 0, signal: null });
      expect(main.output()).toContain('"signal":"SIGTERM"');
      for (const filler of fillers) filler.destroy();
    } finally {
      await killTree(full.pid);
    }
  }, 60_000);

  it.each(['SIGTERM', 'SIGINT'] as const)(
    'finishes the request in flight on %s, refuses new connections, and exits 0',
    async (signal) => {
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      upstream = await startUpstream((_req, res) => {
        void released.then(() => sendRaw(res, 200, '[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]'));
      });
      main = await startMain({
        PORT: '0',
        PETSTORE_BASE_URL: `${upstream.origin}/v1`,
        PETSTORE_API_KEY: UPSTREAM_KEY,
        PETSTORE_RATE_LIMITS: 'off',
        LOG_LEVEL: 'info',
      });
      // PORT=0: the printed URL carries the port the system picked.
      expect(main.port).toBeGreaterThan(0);
      expect(await isRefused(main.port)).toBe(false);

      const inFlight = gql(main.url, '{ pets(first: 1) { nodes { id name } } }');
      expect(await until(() => upstream?.requests.length === 1, 10_000)).toBe(true);
      const signalled = Date.now();
      main.child.kill(signal);

      // Refused while the request is still waiting on the upstream.
      expect(await until(() => isRefused(main?.port ?? 0), 10_000)).toBe(true);
      release();
      const response = await inFlight;
      expect(response.status).toBe(200);
      expect(response.body.errors).toBeUndefined();
      expect(response.body.data).toEqual({ pets: { nodes: [{ id: '1', name: 'Rex' }] } });

      const exit = await main.exited;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(EXIT_WITHIN_MS);
      expect(main.output()).toContain(`"signal":"${signal}"`);
      // After "shutting down", the log says what the drain did and that the process exits.
      const logged = logLines(main.output());
      const from = logged.findIndex((line) => line.msg === 'shutting down');
      expect(
        logged.slice(from + 1).map(({ msg, inFlightAtSignal, cut, code }) => ({ msg, inFlightAtSignal, cut, code })),
      ).toEqual([
        { msg: 'drained: every request that had arrived was answered', inFlightAtSignal: 1, cut: 0, code: undefined },
        { msg: 'stopped: the upstream pool closed; exiting', inFlightAtSignal: undefined, cut: undefined, code: 0 },
      ]);
      await expect(gql(main.url, '{ pets { nodes { id } } }')).rejects.toThrow();
    },
    60_000,
  );

  it('answers every createPet that arrived before SIGTERM: acknowledgements equal pets created', async () => {
    // An upstream that creates the pets only once the test lets it: all of them are pending at the signal.
    let created = 0;
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const store = await startHostileUpstream((req, res) => {
      if (req.method !== 'POST') return answer(res, 404, '{"code":"not_found","message":"no","status":404}');
      void released.then(() => {
        created++;
        answer(res, 201, `{"id":${created},"name":"Rex","categoryId":1,"status":"available"}`);
      });
    });
    try {
      main = await startMain({
        PORT: '0',
        PETSTORE_BASE_URL: store.url,
        PETSTORE_API_KEY: UPSTREAM_KEY,
        PETSTORE_RATE_LIMITS: 'off',
        LOG_LEVEL: 'info',
      });
      // A keep-alive connection in use before the signal: it stays open while the gateway drains.
      const probe = connect({ port: main.port, host: '127.0.0.1' });
      await new Promise((resolve) => probe.once('connect', resolve));
      expect(await rawGet(probe, '/ready')).toMatch(/^HTTP\/1\.1 200/);
      const creates = Array.from({ length: 50 }, (_, i) =>
        gql(main?.url as string, `mutation { createPet(input: { name: "Rex ${i}", categoryId: "1" }) { pet { id } } }`),
      );
      // All 50 have reached the gateway: sent upstream, or waiting there for one of the key's slots.
      const waiting = async () => {
        const text = await (await fetch(new URL('/metrics', main?.url))).text();
        return Number(/^petstore_limiter_queue_depth (\d+)/m.exec(text)?.[1]);
      };
      expect(await until(async () => store.requests.length + (await waiting()) === 50, 20_000)).toBe(true);
      main.child.kill('SIGTERM');
      expect(await until(() => isRefused(main?.port ?? 0), 10_000)).toBe(true);
      // Draining: new connections are refused, and one kept alive from before hears it is not ready.
      expect(await rawGet(probe, '/ready')).toMatch(/^HTTP\/1\.1 503[\s\S]*connection: close/i);
      release();
      const responses = await Promise.all(creates);
      const acknowledged = responses.filter((response) => response.body.errors === undefined).length;
      expect(acknowledged).toBe(50);
      expect(created).toBe(acknowledged);
      expect(await main.exited).toEqual({ code: 0, signal: null });
    } finally {
      await store.close();
    }
  }, 60_000);
});

describe('shutdown with the default configuration, against an upstream that answers seconds after creating', () => {
  let main: Main | undefined;
  let folder: string | undefined;

  afterEach(async () => {
    if (main?.child.pid !== undefined) await killTree(main.child.pid);
    if (folder !== undefined) await rm(folder, { recursive: true, force: true });
    main = undefined;
    folder = undefined;
  });

  it('acknowledges every pet created by requests that take longer than 10 s: SHUTDOWN_GRACE covers PETSTORE_MAX_WAIT + PETSTORE_TIMEOUT', async () => {
    // The free plan's budget spreads 50 creates over seconds of waiting, and each takes 3 s
    // upstream: the last are answered about 13 s after they arrived (a fixed 10 s grace lost 16).
    const upstream = createsOnArrival(3_000);
    const store = await startHostileUpstream(upstream.behaviour);
    try {
      main = await startMain({ PORT: '0', PETSTORE_BASE_URL: store.url, PETSTORE_API_KEY: UPSTREAM_KEY });
      const outcomes = createPets(main.url, 50);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      main.child.kill('SIGTERM');
      const counts = tally(await outcomes);
      expect(counts.reset).toBeUndefined();
      expect(counts.acknowledged).toBe(upstream.created());
      expect(await main.exited).toEqual({ code: 0, signal: null });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('answers, never resets, the connections still waiting to be accepted when the signal came', async () => {
    const upstream = createsOnArrival(0);
    const store = await startHostileUpstream(upstream.behaviour);
    const queue = acceptQueueReader();
    try {
      main = await startMain({ PORT: '0', PETSTORE_BASE_URL: store.url, PETSTORE_API_KEY: UPSTREAM_KEY });
      const pid = checkedPid(main.child.pid);
      const port = main.port;
      // Stopped, the gateway accepts nothing: the 20 connections wait in the kernel's accept queue,
      // as they do on a replica too busy to take them at once (Node takes one per turn of its loop).
      process.kill(pid, 'SIGSTOP');
      const outcomes = createPets(main.url, 20);
      if (queue) expect(await until(() => queue(port) === 20, 10_000)).toBe(true);
      else await new Promise((resolve) => setTimeout(resolve, 1_000));
      process.kill(pid, 'SIGTERM');
      process.kill(pid, 'SIGCONT');
      // Sent after the signal as far as the gateway knows: not carried out, and said so.
      expect(tally(await outcomes)).toEqual({ UNAVAILABLE: 20 });
      expect(upstream.created()).toBe(0);
      expect(await main.exited).toEqual({ code: 0, signal: null });
    } finally {
      await store.close();
    }
  }, 60_000);

  it('npm start stopped by SIGTERM to its process group (delivered twice) acknowledges every pet created, exits 0 and leaves nothing running', async () => {
    const upstream = createsOnArrival(2_000);
    const store = await startHostileUpstream(upstream.behaviour);
    try {
      folder = await mkdtemp(join(tmpdir(), 'petstore-npm-group-'));
      main = await startNpm(
        { PORT: '0', PETSTORE_BASE_URL: store.url, PETSTORE_API_KEY: UPSTREAM_KEY, NODE_OPTIONS: '--import tsx' },
        folder,
      );
      const npm = checkedPid(main.child.pid);
      const below = await descendants(npm);
      const outcomes = createPets(main.url, 30);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await signalGroup(npm, 'SIGTERM');
      // The group's SIGTERM reaches node from the terminal and again from npm; two deliveries close
      // together may merge into one pending signal, so a third comes on purpose, well within the second.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (const pid of below) {
        const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
        if (command.includes('main')) process.kill(pid, 'SIGTERM');
      }
      const counts = tally(await outcomes);
      expect(upstream.created()).toBeGreaterThan(0);
      expect(counts.reset).toBeUndefined();
      expect(counts.acknowledged).toBe(upstream.created());
      expect(await main.exited).toEqual({ code: 0, signal: null });
      expect(main.output()).toContain('signal repeated within a second: already shutting down');
      await waitGone(below, 5_000);
    } finally {
      await store.close();
    }
  }, 60_000);
});

/** The JSON log lines of an output, parsed; the banner's plain lines are left out. */
function logLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Sends GET `path` on an open keep-alive socket; resolves with the raw answer's status line and headers. */
function rawGet(socket: Socket, path: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      if (!text.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      resolve(text);
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(text));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  });
}
