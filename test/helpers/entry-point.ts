/** The gateway's real entry point as the system tests start it: from the checkout, through tsx, no build. */

import { fileURLToPath } from 'node:url';

/** The checkout's root, where package.json and src/ are. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Node's arguments that run src/main.ts as it is (a build would rewrite the dist/ other tests run). */
export const MAIN = ['--import', 'tsx', 'src/main.ts'];
/** The line the entry point prints once it listens, with its URL. */
export const READY = /Pet Store GraphQL gateway ready at (\S+)/;
