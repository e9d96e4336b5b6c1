/**
 * The reading of callgrind dumps and V8's code map behind `npm run bench:instructions`: a function's
 * own instructions leave out what the calls it makes cost, compressed names are followed, and V8's
 * compiled code is named by the latest code placed at its address.
 */

import { describe, expect, it } from 'vitest';
import { ownerOf, readCodeMap, readDump } from '../../../bench/lib/callgrind.js';

// A dump as callgrind writes it (--dump-line=yes): names given once with an id, then the id alone;
// the line after `calls=` is the call's inclusive cost; positions may be relative (+n, -n, *).
const DUMP = `version: 1
creator: callgrind-3.19.0
cmd: node dist/main.js
events: Ir
summary: 1000

ob=(1) /usr/bin/node
fl=(1) ???
fn=(1) main
0 60
+2 40
cfn=(2) Builtins_LoadIC_Megamorphic
calls=3 0
* 300
fn=(2)
0 300
ob=(2) ???
fl=(2) ???
fn=(3) 0x000000000d1d7880'2
0 500
fn=(4) 0x000000000d1d7880
0 100

totals: 1000
`;

describe('readDump', () => {
  it("counts each function's own instructions, not its calls', and joins recursion depths", () => {
    const dump = readDump(DUMP, 'dump');
    expect(dump.total).toBe(1000);
    expect(Object.fromEntries([...dump.functions].map(([name, { object, count }]) => [name, [object, count]]))).toEqual(
      {
        main: ['/usr/bin/node', 100],
        Builtins_LoadIC_Megamorphic: ['/usr/bin/node', 300],
        '0x000000000d1d7880': ['???', 600],
      },
    );
  });

  it('refuses a file without a total', () => {
    expect(() => readDump('events: Ir\nfn=(1) main\n0 5\n', 'empty')).toThrow(/empty: no instruction total/);
  });
});

describe('readCodeMap', () => {
  const map = readCodeMap(
    [
      // Code V8 freed, whose space the next entry's code took over.
      'd1d7800 100 JS:~stale /work/main/dist/gateway/http.js:10:1',
      'd1d7000 1000 JS:*serveGraphql /work/main/dist/gateway/http.js:76:3',
      'd1e0000 80 RegExp:[0-9]{16}',
      '',
    ].join('\n'),
  );

  it('names an address by the latest code placed over it', () => {
    expect(map.name(0xd1d7880)).toBe('JS:*serveGraphql /work/main/dist/gateway/http.js:76:3');
    expect(map.name(0xd1d7010)).toBe('JS:*serveGraphql /work/main/dist/gateway/http.js:76:3');
    expect(map.name(0xd1e0050)).toBe('RegExp:[0-9]{16}');
    expect(map.name(0xd1e0080)).toBeUndefined();
    expect(map.name(0x1000)).toBeUndefined();
  });

  it('gives compiled JavaScript the owners bench:profile uses, and native code its part of V8 or a library', () => {
    expect(ownerOf('0x000000000d1d7880', '???', map)).toEqual({
      owner: 'this gateway (dist/)',
      label: 'serveGraphql dist/gateway/http.js:76',
    });
    expect(ownerOf('0x000000000d1e0050', '???', map).owner).toBe("regular expressions (V8's, compiled)");
    expect(ownerOf('0x0000000000000010', '???', map).owner).toBe("JavaScript, compiled (V8's JIT code), unnamed");
    expect(ownerOf('Builtins_LoadIC', '/usr/bin/node', map).owner).toMatch(/^V8 builtins/);
    expect(
      ownerOf(
        'v8::internal::JsonStringifier::SerializeString(v8::internal::Handle<v8::internal::String>)',
        '/usr/bin/node',
        map,
      ),
    ).toEqual({ owner: "JSON (V8's parser and stringifier)", label: 'v8::internal::JsonStringifier::SerializeString' });
    expect(ownerOf('v8::internal::Scavenger::ScavengeObject(x)', '/usr/bin/node', map).owner).toBe('garbage collector');
    expect(ownerOf('v8::internal::compiler::GraphReducer::ReduceTop()', '/usr/bin/node', map).owner).toBe(
      "V8's compilers",
    );
    expect(
      ownerOf('v8::internal::MaybeHandle<v8::internal::Code> v8::internal::Compiler::Compile(x)', '/usr/bin/node', map)
        .owner,
    ).toBe("V8's compilers");
    // Node's HTTP parser is not one of V8's compilers.
    expect(ownerOf('node::(anonymous namespace)::Parser::on_headers_complete()', '/usr/bin/node', map)).toEqual({
      owner: 'V8 and Node, C++ (the rest)',
      label: 'node::(anonymous namespace)::Parser::on_headers_complete',
    });
    expect(ownerOf('_int_malloc', '/usr/lib/x86_64-linux-gnu/libc.so.6', map).owner).toBe(
      'libraries (libc, OpenSSL, …)',
    );
  });
});
