/**
 * Loaded into the gateway by `npm run bench:alloc` (`node --import ./bench/alloc-preload.mjs
 * dist/main.js`); never part of the gateway. V8's sampling heap profiler through an in-process
 * inspector session (no port is opened): the first SIGUSR2 starts sampling, the second stops it and
 * writes the profile, with the garbage collections seen in between, to BENCH_ALLOC_FILE.
 *
 * BENCH_ALLOC_KEEP says which samples stay in the profile: `all` keeps objects that either garbage
 * collector freed (every allocation: what the young generation has to absorb), `old` drops those a
 * scavenge freed (what outlived the young generation: promoted, to be freed by a full GC, or still
 * live at the end). V8 names these includeObjectsCollectedByMinorGC / ...ByMajorGC.
 */

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { constants, PerformanceObserver } from 'node:perf_hooks';

const file = process.env.BENCH_ALLOC_FILE;
const keepAll = process.env.BENCH_ALLOC_KEEP !== 'old';
if (file !== undefined) {
  const session = new Session();
  session.connect();
  const post = (method, params = {}) =>
    new Promise((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
    );
  const gcs = { minor: 0, major: 0, pauseMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.major++;
      else if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) gcs.minor++;
      gcs.pauseMs += entry.duration;
    }
  });
  let sampling = false;
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      Object.assign(gcs, { minor: 0, major: 0, pauseMs: 0 });
      observer.observe({ entryTypes: ['gc'] });
      post('HeapProfiler.enable')
        .then(() =>
          post('HeapProfiler.startSampling', {
            samplingInterval: 1024,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: keepAll,
          }),
        )
        .catch((error) => console.error('bench:alloc: could not start sampling:', error));
      return;
    }
    observer.disconnect();
    post('HeapProfiler.stopSampling')
      .then(({ profile }) => writeFileSync(file, JSON.stringify({ profile, gcs })))
      .catch((error) => console.error('bench:alloc: could not write the profile:', error));
  });
}
