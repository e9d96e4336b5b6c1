/**
 * Replays a Dockerfile without a Docker engine (none runs on the machines that test this project):
 * each stage gets a folder standing for its filesystem root, COPY copies from the build context
 * or from an earlier stage's folder, RUN runs the same shell command in the stage's WORKDIR with
 * the stage's ENV. What it cannot do, it says: the base image (FROM) is this machine's Node and
 * tools, USER is recorded and not switched to, and HEALTHCHECK and CMD are returned to the caller
 * to run. Any other instruction or form is refused, so the Dockerfile cannot outgrow the replay.
 */

import { spawn } from 'node:child_process';
import { cp, mkdir, stat } from 'node:fs/promises';
import { basename, join, posix } from 'node:path';
import { killTree } from './processes.js';

export interface Instruction {
  readonly op: string;
  readonly args: string;
  /** 1-based line of the instruction's first line in the file. */
  readonly line: number;
}

export interface Stage {
  readonly name: string;
  readonly image: string;
  readonly instructions: readonly Instruction[];
}

/** Logical lines (continuations joined, comments and blank lines dropped), grouped by FROM. */
export function parseDockerfile(text: string): Stage[] {
  const lines: { text: string; line: number }[] = [];
  let current: { text: string; line: number } | undefined;
  text.split('\n').forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    current ??= { text: '', line: index + 1 };
    if (trimmed.endsWith('\\')) {
      current.text += `${trimmed.slice(0, -1).trim()} `;
      return;
    }
    current.text += trimmed;
    lines.push(current);
    current = undefined;
  });
  if (current) throw new Error(`Dockerfile line ${current.line}: continuation runs past the end of the file`);

  const stages: { name: string; image: string; instructions: Instruction[] }[] = [];
  for (const { text: logical, line } of lines) {
    const [, op = '', args = ''] = /^(\S+)\s*(.*)$/.exec(logical) ?? [];
    const upper = op.toUpperCase();
    if (upper === 'FROM') {
      const match = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!match) throw new Error(`Dockerfile line ${line}: cannot read FROM ${args}`);
      stages.push({ image: match[1] as string, name: match[2] ?? String(stages.length), instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile line ${line}: ${upper} before FROM`);
    stage.instructions.push({ op: upper, args, line });
  }
  return stages;
}

export interface ReplayedStage {
  readonly name: string;
  /** The folder standing for the stage's filesystem root. */
  readonly root: string;
  /** The stage's WORKDIR, inside `root`. */
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly user: string | undefined;
  readonly expose: readonly number[];
  /** HEALTHCHECK's command (exec form). */
  readonly healthcheck: readonly string[] | undefined;
  /** CMD (exec form). */
  readonly cmd: readonly string[] | undefined;
  /** Every RUN, with how long it took and the last 4,000 characters it wrote (stdout and stderr). */
  readonly runs: readonly { command: string; ms: number; output: string }[];
}

export interface ReplayOptions {
  /** The build context (what `docker build <context>` would send). */
  readonly context: string;
  /** Where the stages' folders go. */
  readonly into: string;
  /** The environment RUN starts from, standing for the base image's. */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Longest one RUN may take. */
  readonly runTimeoutMs: number;
}

export async function replayDockerfile(stages: readonly Stage[], options: ReplayOptions): Promise<ReplayedStage[]> {
  const done: ReplayedStage[] = [];
  for (const stage of stages) {
    const root = join(options.into, stage.name.replace(/[^A-Za-z0-9_-]/g, '_'));
    await mkdir(root, { recursive: true });
    let workdir = '/';
    const env: Record<string, string> = {};
    const replayed = {
      name: stage.name,
      root,
      user: undefined as string | undefined,
      expose: [] as number[],
      healthcheck: undefined as string[] | undefined,
      cmd: undefined as string[] | undefined,
      runs: [] as { command: string; ms: number; output: string }[],
    };
    const inRoot = (path: string) => join(root, posix.resolve(workdir, path));
    for (const { op, args, line } of stage.instructions) {
      const where = `Dockerfile line ${line} (${op})`;
      switch (op) {
        case 'WORKDIR':
          workdir = posix.resolve(workdir, args);
          await mkdir(inRoot('.'), { recursive: true });
          break;
        case 'ENV':
          for (const pair of args.split(/\s+/)) {
            const [name, ...value] = pair.split('=');
            if (!name || value.length === 0) throw new Error(`${where}: only ENV NAME=value pairs are replayed`);
            env[name] = value.join('=');
          }
          break;
        case 'COPY':
          await copy(args, where, inRoot, (stageName, path) => {
            const from = done.find((previous) => previous.name === stageName);
            if (!from) throw new Error(`${where}: no earlier stage ${stageName}`);
            return join(from.root, posix.resolve('/', path));
          });
          break;
        case 'RUN': {
          if (args.startsWith('[')) throw new Error(`${where}: only the shell form of RUN is replayed`);
          const started = Date.now();
          const output = await run(args, inRoot('.'), { ...options.baseEnv, ...env }, options.runTimeoutMs, where);
          replayed.runs.push({ command: args, ms: Date.now() - started, output });
          break;
        }
        case 'USER':
          replayed.user = args;
          break;
        case 'EXPOSE':
          replayed.expose.push(...args.split(/\s+/).map((port) => Number.parseInt(port, 10)));
          break;
        case 'HEALTHCHECK':
          replayed.healthcheck = execForm(args.replace(/^(--\S+\s+)*CMD\s+/, ''), where);
          break;
        case 'CMD':
          replayed.cmd = execForm(args, where);
          break;
        default:
          throw new Error(`${where}: not replayed here; extend test/helpers/dockerfile.ts first`);
      }
    }
    done.push({ ...replayed, workdir: inRoot('.'), env });
  }
  return done;

  async function copy(
    args: string,
    where: string,
    inRoot: (path: string) => string,
    fromStage: (stage: string, path: string) => string,
  ): Promise<void> {
    const words = args.split(/\s+/);
    let from: string | undefined;
    while (words[0]?.startsWith('--')) {
      const flag = words.shift() as string;
      if (flag.startsWith('--from=')) from = flag.slice('--from='.length);
      else if (!/^--(chown|chmod)=/.test(flag)) throw new Error(`${where}: flag ${flag} is not replayed`);
    }
    const dest = words.pop();
    if (!dest || words.length === 0 || args.includes('[')) throw new Error(`${where}: COPY <src>... <dest> expected`);
    const intoFolder = dest.endsWith('/') || words.length > 1;
    for (const source of words) {
      if (/[*?]/.test(source) || source.split('/').includes('..')) throw new Error(`${where}: plain paths only`);
      const path = from === undefined ? join(options.context, source) : fromStage(from, source);
      const target = intoFolder ? join(inRoot(dest), basename(source)) : inRoot(dest);
      // As COPY does: a folder's contents go into the target; symlinks (node_modules/.bin) stay links.
      if ((await stat(path)).isDirectory()) await mkdir(target, { recursive: true });
      await cp(path, target, { recursive: true, verbatimSymlinks: true });
    }
  }
}

function execForm(args: string, where: string): string[] {
  try {
    const parsed: unknown = JSON.parse(args);
    if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
  } catch {}
  throw new Error(`${where}: the exec form (a JSON array) is expected, so that signals reach node`);
}

function run(command: string, cwd: string, env: Record<string, string>, timeoutMs: number, where: string) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4_000);
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    // npm and the compilers it starts are below the shell: stop them all, each by its own pid.
    const timer = setTimeout(() => child.pid !== undefined && void killTree(child.pid), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${where}: \`${command}\` failed (${signal ?? code}):\n${output}`));
    });
  });
}
