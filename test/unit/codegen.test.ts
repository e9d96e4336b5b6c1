/**
 * Everything `npm run codegen` makes (the resolver types, and the typed client with its
 * persisted-documents manifest) is committed; this fails while any of it is stale or missing. It
 * runs graphql-codegen's own CLI with `--check`, which generates in memory, compares with the files
 * and writes nothing. A child process, as `npm run codegen` runs it: the plugins are CommonJS and
 * check `instanceof` against CommonJS graphql, which vitest's ESM graph would not give them.
 */

import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const require = createRequire(import.meta.url);
const CLI_PACKAGE = require.resolve('@graphql-codegen/cli/package.json');
const CLI = join(
  dirname(CLI_PACKAGE),
  (require(CLI_PACKAGE) as { bin: Record<string, string> }).bin['graphql-codegen'] as string,
);

it('the committed generated files are what codegen.ts makes of the schema and operations (npm run codegen)', async () => {
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    execFile(
      process.execPath,
      [CLI, '--config', 'codegen.ts', '--check', '--silent'],
      { cwd: ROOT, timeout: 50_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (error.code as number | null) : 0, output: `${stdout}${stderr}` }),
    );
  });
  expect(result).toEqual({ code: 0, output: '' });
}, 60_000);
