/**
 * Reading valgrind's callgrind dumps for `npm run bench:instructions`: each function's own
 * instructions, and who owns the function. callgrind names V8's compiled JavaScript only by its
 * address; Node started with `--perf-basic-prof` writes where each compiled function lies
 * (/tmp/perf-PID.map), and that names it, with the owners `bench:profile` uses (bench/lib/frames.ts).
 */

import { owner, where } from './frames.js';

/** One dump: its total, and each function's own instructions (name → the file it is in, and the count). */
export interface Dump {
  readonly total: number;
  readonly functions: ReadonlyMap<string, { readonly object: string; readonly count: number }>;
}

/**
 * Reads a dump in callgrind's format. A cost line counts for the function named above it, except
 * the line after `calls=`, which is what that call cost: the callee counts it as its own.
 */
export function readDump(text: string, file: string): Dump {
  const total = /^(?:summary|totals): (\d+)/m.exec(text)?.[1];
  if (total === undefined) throw new Error(`${file}: no instruction total`);
  const names = new Map<string, string>();
  const objects = new Map<string, string>();
  const functions = new Map<string, { object: string; count: number }>();
  let current: { object: string; count: number } | undefined;
  let object = '';
  let afterCall = false;
  for (const line of text.split('\n')) {
    const first = line.charCodeAt(0);
    // A cost line: a position (a number, or +n/-n/* relative to the last) and then the count.
    if ((first >= 48 && first <= 57) || first === 43 || first === 45 || first === 42) {
      if (afterCall) afterCall = false;
      else if (current !== undefined) current.count += Number(line.split(' ')[1] ?? 0);
      continue;
    }
    if (line.startsWith('calls=')) {
      afterCall = true;
      continue;
    }
    // Names are compressed: `fn=(12) name` the first time, `fn=(12)` after; the same for files (ob).
    const named = /^(c?fn|c?ob)=\((\d+)\)(?: (.*))?$/.exec(line);
    if (!named) continue;
    const [, field = '', id = '', name] = named;
    const table = field.endsWith('ob') ? objects : names;
    if (name !== undefined) table.set(id, name);
    if (field === 'ob') object = objects.get(id) ?? '';
    if (field === 'fn') {
      // `'2` marks a recursion depth: the same function.
      const fn = (names.get(id) ?? '').replace(/'\d+$/, '');
      current = functions.get(fn) ?? { object, count: 0 };
      functions.set(fn, current);
    }
  }
  return { total: Number(total), functions };
}

/** Where V8 put its compiled code: the perf map Node writes with --perf-basic-prof. */
export interface CodeMap {
  /** The name of the code at `address`; the latest entry wins, as code is freed and its space reused. */
  name(address: number): string | undefined;
}

export function readCodeMap(text: string): CodeMap {
  const entries: { start: number; end: number; name: string; order: number }[] = [];
  for (const [order, line] of text.split('\n').entries()) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (!match) continue;
    const start = Number.parseInt(match[1] as string, 16);
    entries.push({ start, end: start + Number.parseInt(match[2] as string, 16), name: match[3] as string, order });
  }
  entries.sort((a, b) => a.start - b.start);
  const longest = entries.reduce((most, entry) => Math.max(most, entry.end - entry.start), 0);
  return {
    name(address) {
      // The last entry starting at or before the address, then back while one could still cover it.
      let low = 0;
      let high = entries.length - 1;
      while (low <= high) {
        const middle = (low + high) >> 1;
        if ((entries[middle] as { start: number }).start <= address) low = middle + 1;
        else high = middle - 1;
      }
      let found: (typeof entries)[number] | undefined;
      for (let index = high; index >= 0; index--) {
        const entry = entries[index] as (typeof entries)[number];
        if (address - entry.start >= longest) break;
        if (address < entry.end && (found === undefined || entry.order > found.order)) found = entry;
      }
      return found?.name;
    },
  };
}

/** Who owns native code (not V8's compiled JavaScript): V8's parts by name, Node's binary, or a library. */
const NATIVE: readonly (readonly [owner: string, test: (name: string, object: string) => boolean])[] = [
  // C++ names may begin with their return type (`v8::internal::MaybeHandle<…> v8::internal::Compiler::…`).
  [
    "V8's compilers",
    (name) =>
      name.startsWith('Builtins_Compile') ||
      /(^|\s)v8::internal::((compiler|maglev|interpreter|baseline)::|(Compiler|BytecodeGenerator|Parser|PreParser|Scanner|RegExpCompiler|RegExpParser)(::|<))/.test(
        name,
      ),
  ],
  ['V8 builtins (property access, calls, promises, strings)', (name) => name.startsWith('Builtins_')],
  [
    'garbage collector',
    (name) =>
      /Scaveng|MarkCompact|Marking|Sweep|Evacuat|heap::|Heap::|Marker|MemoryAllocator|RememberedSet|SlotSet|Space::/.test(
        name,
      ),
  ],
  ["JSON (V8's parser and stringifier)", (name) => /Json(Parser|Stringifier)/.test(name)],
  ['V8 and Node, C++ (the rest)', (_name, object) => /\/node(js)?$/.test(object)],
  ['libraries (libc, OpenSSL, …)', () => true],
];

/** A function's owner (the rows of `bench:profile` for JavaScript) and how a table names it. */
export function ownerOf(fn: string, object: string, code: CodeMap | undefined): { owner: string; label: string } {
  if (/^0x[0-9a-f]+$/.test(fn)) {
    const name = code?.name(Number.parseInt(fn.slice(2), 16));
    // `JS:*name url:line:column` (the mark says which tier compiled it); the name may be empty.
    const js = name === undefined ? null : /^(?:JS|Eval|Script|Function):[*~^+]?(\S*) (.+):(\d+):\d+$/.exec(name);
    if (js) {
      const frame = {
        functionName: js[1] as string,
        url: (js[2] as string).replace(/^file:\/\//, ''),
        lineNumber: Number(js[3]) - 1,
      };
      return { owner: owner(frame), label: where(frame) };
    }
    if (name?.startsWith('RegExp:')) return { owner: "regular expressions (V8's, compiled)", label: name };
    return { owner: "JavaScript, compiled (V8's JIT code), unnamed", label: name ?? fn };
  }
  const native = NATIVE.find(([, test]) => test(fn, object))?.[0] as string;
  // C++ names carry their whole signature; the function is enough.
  return { owner: native, label: fn.replace(/\((?!anonymous namespace\)).*$/, '') };
}
