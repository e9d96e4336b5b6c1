/**
 * Who owns a frame of a V8 profile (CPU or heap): a package, Node, the gateway, or V8's pseudo-frames;
 * shared by `bench:profile` and `bench:alloc`.
 */

export interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}

/** The owner of V8's idle pseudo-frame: no CPU spent. */
export const IDLE = 'idle (waiting on the store or the load tool)';

/** Who owns a frame: a package, Node, the gateway, the floors of the bench, or V8's pseudo-frames. */
export function owner(frame: CallFrame): string {
  const { functionName, url } = frame;
  if (url === '') {
    if (functionName === '(idle)') return IDLE;
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName === '(program)') return 'V8 itself (compiler, runtime)';
    return 'native code (JSON, crypto, buffers)';
  }
  if (url.startsWith('node:')) {
    const module = url.slice('node:'.length).replace(/^internal\//, '');
    if (/^(http|_http|net|stream|streams|tls|dns|url)/.test(module)) return 'Node: HTTP, sockets, streams';
    if (/^(timers|process|async_hooks|event_target|abort_controller|events)/.test(module)) {
      return 'Node: timers, events, abort signals';
    }
    return 'Node: other';
  }
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage?.[1]) {
    const name = inPackage[1];
    if (name.startsWith('@apollo/')) return 'Apollo Server (@apollo/*)';
    return name;
  }
  // The floor before the gateway: it runs compiled into bench/.child/, whose path holds no `/dist/`.
  if (url.includes('/bench/lib/floor.')) return "the floor's resolver and edge (bench/lib/floor.ts)";
  if (url.includes('/dist/')) return 'this gateway (dist/)';
  return 'other';
}

/** A function as the profile names it: name, file and line. */
export function where(frame: CallFrame): string {
  const { functionName, url, lineNumber } = frame;
  // A package's files by package (`@apollo/server/dist/esm/…`), the gateway's own by `dist/…`.
  const file = url.includes('/node_modules/')
    ? url.replace(/^.*node_modules\//, '')
    : url.includes('/bench/.child/')
      ? url.replace(/^.*\/bench\/\.child\//, '')
      : url.replace(/^.*\/dist\//, 'dist/');
  return `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
}
