/**
 * Part of `npm run build`, after tsc: the budget's Lua scripts (src/gateway/upstream/limits/lua/),
 * which tsc does not copy, beside the built module that reads them.
 */

import { cpSync, rmSync } from 'node:fs';

const from = new URL('../src/gateway/upstream/limits/lua/', import.meta.url);
const to = new URL('../dist/gateway/upstream/limits/lua/', import.meta.url);
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
