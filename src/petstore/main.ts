/** `npm run petstore`: the reference Pet Store alone, configured from the environment. */

import { parseKeys } from './plans.js';
import { demoCatalogue } from './seed.js';
import { DEMO_KEY, startPetstore } from './start.js';

function fail(message: string): never {
  console.error(`petstore: ${message}`);
  process.exit(1);
}

const portText = process.env.PORT ?? '4010';
const port =
  /^[0-9]{1,5}$/.test(portText) && Number(portText) <= 65535 ? Number(portText) : fail('PORT must be 0..65535');
let keys: ReturnType<typeof parseKeys> | undefined;
try {
  keys = process.env.PETSTORE_KEYS ? parseKeys(process.env.PETSTORE_KEYS) : undefined;
} catch (error) {
  fail((error as Error).message);
}

const store = await startPetstore({
  port,
  host: process.env.HOST ?? '127.0.0.1',
  ...(keys ? { keys } : {}),
  seed: demoCatalogue(),
});
console.log(`Pet Store listening at ${store.url} (${store.catalogue.size} demo pets)`);
// Only the built-in demo key is printed: keys from PETSTORE_KEYS are secrets.
console.log(keys ? `API keys: ${keys.size} from PETSTORE_KEYS` : `Demo API key (free plan): ${DEMO_KEY}`);
// The URL quoted: a shell such as zsh takes an unquoted `?` for a glob and refuses the command.
console.log(`Try: curl -H 'Authorization: Bearer ${keys ? '<your key>' : DEMO_KEY}' '${store.url}/pets?limit=3'`);

// One stop for any number of signals: `npm run petstore` stopped with Ctrl-C, or by a signal to
// its process group, gets the signal twice (npm forwards it too), and the second must not kill the
// store mid-close.
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void store.close().then(() => process.exit(0));
  });
}
