/** Reading a createPet body: exact int64 numbers, and the validation rules of docs/rest-interface.md. */

import { isInteger, isLosslessNumber, parse } from 'lossless-json';
import { isPositiveInt64, parseInt64 } from '../int64.js';
import { type NewPet, PET_STATUSES, type PetStatus } from './store.js';

export const MAX_NAME_LENGTH = 200;

export type NewPetResult =
  | { readonly ok: true; readonly pet: NewPet }
  | { readonly ok: false; readonly message: string };

/** Parses and validates a NewPet from the raw body; every failure is a message for a 400. */
export function parseNewPet(body: string): NewPetResult {
  let value: unknown;
  try {
    // lossless-json keeps every number as its digits, so 2^63-1 is not rounded to a double.
    value = parse(body);
  } catch {
    return { ok: false, message: 'body is not valid JSON' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || isLosslessNumber(value)) {
    return { ok: false, message: 'body must be a JSON object (NewPet)' };
  }
  const { name, categoryId, status } = value as Record<string, unknown>;

  if (typeof name !== 'string') return { ok: false, message: 'name is required and must be a string' };
  const length = [...name].length;
  if (name.trim() === '' || length > MAX_NAME_LENGTH) {
    return { ok: false, message: `name must be 1 to ${MAX_NAME_LENGTH} characters, not all white space` };
  }

  if (categoryId === undefined) return { ok: false, message: 'categoryId is required' };
  const category =
    isLosslessNumber(categoryId) && isInteger(categoryId.value) ? parseInt64(categoryId.value) : undefined;
  if (category === undefined || !isPositiveInt64(category)) {
    return { ok: false, message: 'categoryId must be a positive int64 integer' };
  }

  if (status !== undefined && !(typeof status === 'string' && PET_STATUSES.includes(status as PetStatus))) {
    return { ok: false, message: `status must be one of ${PET_STATUSES.join(', ')}` };
  }

  return { ok: true, pet: { name, categoryId: category, status: (status as PetStatus | undefined) ?? 'available' } };
}
