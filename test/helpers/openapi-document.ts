/**
 * schema/petstore.openapi.yaml as a checker for tests: its schemas compiled with ajv (JSON Schema
 * 2020-12, as OpenAPI 3.1 uses it), $refs followed, and a caller that sends a request to a real
 * store and validates the answer's status, headers and body against the document, recording each
 * operation/status pair it saw. Bodies are parsed with lossless-json, so ids above 2^53 stay exact.
 */

import { readFileSync } from 'node:fs';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { isInteger, isLosslessNumber, LosslessNumber, parse } from 'lossless-json';
import { expect } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { INT64_MAX, INT64_MIN } from '../../src/int64.js';

export type Doc = Record<string, any>;

export const DOC: Doc = parseYaml(readFileSync(new URL('../../schema/petstore.openapi.yaml', import.meta.url), 'utf8'));
const DOC_ID = 'https://petstore.invalid/petstore.openapi.yaml';
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Path-level extension listing the answer to any method the path does not document. */
export const OTHER_METHODS = 'x-other-methods';

// ajv-formats is CommonJS whose module.exports is the plugin; under NodeNext its types put it on `default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv2020,
) => Ajv2020;
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
// Integers only: values outside int64 never reach a schema as numbers (see forSchema).
ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) });
// The document's top level is OpenAPI, not JSON Schema: those keys are no-op keywords; schemas inside stay strict.
for (const keyword of ['openapi', 'info', 'servers', 'security', 'tags', 'paths', 'components'])
  ajv.addKeyword(keyword);
ajv.addSchema(DOC, DOC_ID);

/** A JSON pointer as URI fragment, for a $ref into the document. */
function fragment(tokens: readonly (string | number)[]): string {
  return `#/${tokens.map((token) => encodeURIComponent(String(token).replace(/~/g, '~0').replace(/\//g, '~1'))).join('/')}`;
}

export function decodePointer(ref: string): string[] {
  expect(ref.startsWith('#/'), `local $ref ${ref}`).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .map((token) => decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** The node at `tokens`, following $refs; returns it with the pointer it really lives at. */
export function resolve(tokens: readonly (string | number)[]): { node: any; at: (string | number)[] } {
  let node: any = DOC;
  for (const token of tokens) node = node?.[token];
  if (node !== null && typeof node === 'object' && typeof node.$ref === 'string')
    return resolve(decodePointer(node.$ref));
  return { node, at: [...tokens] };
}

const validators = new Map<string, ValidateFunction>();

export function validatorAt(tokens: readonly (string | number)[]): ValidateFunction {
  const ref = `${DOC_ID}${fragment(tokens)}`;
  let validate = validators.get(ref);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: ref });
    validators.set(ref, validate);
  }
  return validate;
}

/** ajv's errors for `value` against the schema at `tokens`; [] when valid. */
export function schemaErrors(tokens: readonly (string | number)[], value: unknown): string[] {
  const validate = validatorAt(tokens);
  return validate(value) ? [] : (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message}`);
}

/**
 * A lossless-json value as JSON Schema should see it: an integer inside int64 becomes a number
 * (integral, so `type: integer` holds even where a double rounds it; exact digits are checked
 * separately), an integer outside int64 becomes a string so `type: integer` fails.
 */
export function forSchema(value: unknown): unknown {
  if (isLosslessNumber(value)) {
    if (!isInteger(value.value)) return Number(value.value);
    const big = BigInt(value.value);
    return big >= INT64_MIN && big <= INT64_MAX ? Number(value.value) : `integer ${value.value} outside int64`;
  }
  if (Array.isArray(value)) return value.map(forSchema);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, forSchema(item)]));
  }
  return value;
}

/** A raw query or path parameter as its schema should see it (digits are numbers, anything else a string). */
export function parameterValue(raw: string): unknown {
  return isInteger(raw) ? forSchema(new LosslessNumber(raw)) : raw;
}

export function parameterTokens(template: string, method: string, name: string): (string | number)[] {
  for (const base of [
    ['paths', template, method, 'parameters'],
    ['paths', template, 'parameters'],
  ]) {
    const count = (resolve(base).node as unknown[] | undefined)?.length ?? 0;
    for (let index = 0; index < count; index++) {
      const parameter = resolve([...base, index]);
      if (parameter.node.name === name) return [...parameter.at, 'schema'];
    }
  }
  throw new Error(`${method.toUpperCase()} ${template} documents no parameter ${name}`);
}

/** Every operation/status pair the document lists: `GET /pets 200`; `* /pets 405` for other methods. */
export function documentedPairs(): string[] {
  const pairs: string[] = [];
  for (const [template, item] of Object.entries<Doc>(DOC.paths)) {
    for (const method of HTTP_METHODS) {
      for (const status of Object.keys(item[method]?.responses ?? {}))
        pairs.push(`${method.toUpperCase()} ${template} ${status}`);
    }
    for (const status of Object.keys(item[OTHER_METHODS]?.responses ?? {})) pairs.push(`* ${template} ${status}`);
  }
  return pairs.sort();
}

export interface Checked {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed by lossless-json: every number is a LosslessNumber. */
  readonly body: any;
}

export interface CallOptions {
  readonly key?: string | null;
  readonly body?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Sends requests to a store and checks each answer against the document. */
export interface DocumentedCaller {
  /** Every operation/status pair answered so far: `GET /pets 200`, or `* /pets 405` for other methods. */
  readonly exercised: ReadonlySet<string>;
  /**
   * Sends `method path` (path relative to the base URL, matching the document's `template`) and
   * validates the answer against the document: the status is documented for the operation, the
   * content type and body match its schema, and each documented header is present when required
   * and matches its schema. Records the operation/status pair as exercised.
   */
  call(method: string, template: string, path: string, options?: CallOptions, baseUrl?: string): Promise<Checked>;
}

/** A caller whose requests go to `defaults.baseUrl()` with the bearer key `defaults.key` unless told otherwise. */
export function createDocumentedCaller(defaults: { baseUrl: () => string; key: string }): DocumentedCaller {
  const exercised = new Set<string>();
  async function call(
    method: string,
    template: string,
    path: string,
    { key = defaults.key, body, headers = {} }: CallOptions = {},
    baseUrl = defaults.baseUrl(),
  ): Promise<Checked> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    const status = String(response.status);
    const item = DOC.paths[template];
    expect(item, `path ${template} is documented`).toBeDefined();
    const lower = method.toLowerCase();
    const [pair, base] =
      item[lower] === undefined
        ? [`* ${template} ${status}`, ['paths', template, OTHER_METHODS, 'responses', status]]
        : [`${method} ${template} ${status}`, ['paths', template, lower, 'responses', status]];
    const { node: documented, at } = resolve(base);
    expect(documented, `${pair} is documented (body: ${text})`).toBeDefined();
    exercised.add(pair);

    const media = Object.keys(documented.content ?? {});
    let parsed: any;
    if (media.length === 0) {
      expect(text, `${pair} has no body`).toBe('');
    } else {
      expect(media).toContain(response.headers.get('content-type'));
      parsed = parse(text);
      const schemaAt = [...at, 'content', response.headers.get('content-type') as string, 'schema'];
      expect(schemaErrors(schemaAt, forSchema(parsed)), `${pair} body ${text}`).toEqual([]);
      if (resolve(schemaAt).at.join('/') === 'components/schemas/Error') {
        expect(String(parsed.status), `${pair}: Error.status is the HTTP status`).toBe(status);
      }
    }

    for (const name of Object.keys(documented.headers ?? {})) {
      const header = resolve([...at, 'headers', name]);
      const value = response.headers.get(name);
      if (value === null) {
        expect(header.node.required ?? false, `${pair}: required header ${name}`).toBe(false);
        continue;
      }
      const schema = resolve([...header.at, 'schema']).node;
      const typed = schema.type === 'integer' && isInteger(value) ? Number(value) : value;
      expect(schemaErrors([...header.at, 'schema'], typed), `${pair}: header ${name}: ${value}`).toEqual([]);
    }
    return { status: response.status, headers: response.headers, text, body: parsed };
  }
  return { exercised, call };
}
