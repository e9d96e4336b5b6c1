/**
 * PERSISTED_DOCUMENTS and PERSISTED_DOCUMENTS_ONLY as parseConfig reads them: the manifest's path
 * (the file itself is read by the gateway at start: test/unit/gateway/edge/trusted-documents-manifest.test.ts),
 * safelisting off by default, and one line naming the variable for a bad value or a safelist with no list.
 */

import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config.js';

describe('PERSISTED_DOCUMENTS', () => {
  it('is off unless set', () => {
    expect(parseConfig({}).persistedDocuments).toBeUndefined();
    expect(parseConfig({ PERSISTED_DOCUMENTS: '  ' }).persistedDocuments).toBeUndefined();
  });

  it('takes the manifest path, safelisting off by default', () => {
    const config = parseConfig({ PERSISTED_DOCUMENTS: 'examples/client/__generated__/persisted-documents.json' });
    expect(config.persistedDocuments).toEqual({
      path: 'examples/client/__generated__/persisted-documents.json',
      only: false,
    });
    expect(Object.isFrozen(config.persistedDocuments)).toBe(true);
  });

  it.each(['true', 'TRUE', '1', 'yes'])('turns safelisting on with PERSISTED_DOCUMENTS_ONLY=%s', (only) => {
    const config = parseConfig({ PERSISTED_DOCUMENTS: 'm.json', PERSISTED_DOCUMENTS_ONLY: only });
    expect(config.persistedDocuments).toEqual({ path: 'm.json', only: true });
  });

  it('refuses a PERSISTED_DOCUMENTS_ONLY that is not a boolean, naming it', () => {
    expect(() => parseConfig({ PERSISTED_DOCUMENTS: 'm.json', PERSISTED_DOCUMENTS_ONLY: 'always' })).toThrow(
      new ConfigError('PERSISTED_DOCUMENTS_ONLY must be true or false'),
    );
  });

  it('refuses safelisting without a manifest: it would refuse every operation', () => {
    expect(() => parseConfig({ PERSISTED_DOCUMENTS_ONLY: 'true' })).toThrow(
      new ConfigError(
        'PERSISTED_DOCUMENTS_ONLY=true needs PERSISTED_DOCUMENTS, the path of a persisted-documents manifest (npm run codegen writes one)',
      ),
    );
    expect(parseConfig({ PERSISTED_DOCUMENTS_ONLY: 'false' }).persistedDocuments).toBeUndefined();
  });
});
