// Rules for human-readable text the service stores: names of people, identities and
// secrets. Shared so every name is refused for the same reasons with the same words.
import { AppError } from '../errors.js';

/** A UTF-16 surrogate without its other half: no UTF-8 encoding exists for it. */
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** C0, DEL and C1: never part of a name, and a newline in one forges lines in logs and exports. */
export const CONTROL_CHARACTER = /\p{Cc}/u;

/**
 * A display name, trimmed: 1 to `max` characters, no control characters, no lone
 * surrogate (stored as UTF-8 it would silently come back as U+FFFD).
 */
export function validateName(raw: string, field: string, max = 64): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > max || CONTROL_CHARACTER.test(name) || LONE_SURROGATE.test(name)) {
    throw new AppError('VALIDATION', `${field} must be 1 to ${max} characters, without control characters or lone surrogates`);
  }
  return name;
}
