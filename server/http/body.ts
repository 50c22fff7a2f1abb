// Request body decoding for routes: JSON or form-urlencoded into a plain value that
// zod then validates. Bodies are already capped by the HTTP front.
import { AppError } from '../errors.js';
import type { HttpRequest } from './types.js';

/** Deepest array/object nesting accepted in a JSON body (downstream code may recurse). */
export const MAX_JSON_DEPTH = 32;

/**
 * Decodes the body of `req`:
 * - empty body: `{}`;
 * - `application/json` (or `application/*+json`), or no content-type: JSON.parse;
 *   malformed → 400, nesting deeper than MAX_JSON_DEPTH → 400; `__proto__` keys (and
 *   `constructor` keys holding a `prototype`) are removed;
 * - `application/x-www-form-urlencoded`: a null-prototype object of the fields (last wins);
 * - any other content-type: 415.
 */
export function parseJsonBody(req: HttpRequest): unknown {
  const body = req.body;
  if (body.length === 0) return {};
  const type = mediaType(req.headers['content-type']);
  if (type === '' || type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))) {
    return parseJsonText(body.toString('utf8'));
  }
  if (type === 'application/x-www-form-urlencoded') {
    return parseForm(body.toString('utf8'));
  }
  throw new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type: ${type}`);
}

/** The media type of a Content-Type value, lower-case, without parameters; '' when absent. */
function mediaType(contentType: string | undefined): string {
  if (contentType === undefined) return '';
  const semi = contentType.indexOf(';');
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

function parseJsonText(text: string): unknown {
  // A UTF-8 byte order mark is not JSON whitespace; tolerate it.
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError('BAD_REQUEST', 'Malformed JSON body');
  }
  if (typeof value === 'object' && value !== null) sanitize(value);
  return value;
}

/**
 * Iterative walk: enforces the depth limit and removes prototype-pollution keys.
 * JSON.parse itself only creates own data properties, but later merges (Object.assign,
 * naive deep merges) would follow them.
 */
function sanitize(root: object): void {
  const stack: object[] = [root];
  const depths: number[] = [1];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const depth = depths.pop()!;
    if (depth > MAX_JSON_DEPTH) throw new AppError('BAD_REQUEST', `JSON body nested deeper than ${MAX_JSON_DEPTH} levels`);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v: unknown = node[i];
        if (typeof v === 'object' && v !== null) {
          stack.push(v);
          depths.push(depth + 1);
        }
      }
      continue;
    }
    const rec = node as Record<string, unknown>;
    if (Object.hasOwn(rec, '__proto__')) delete rec['__proto__'];
    if (Object.hasOwn(rec, 'constructor')) {
      const c = rec['constructor'];
      if (typeof c === 'object' && c !== null && Object.hasOwn(c, 'prototype')) delete rec['constructor'];
    }
    for (const key in rec) {
      const v = rec[key];
      if (typeof v === 'object' && v !== null) {
        stack.push(v);
        depths.push(depth + 1);
      }
    }
  }
}

function parseForm(text: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [key, value] of new URLSearchParams(text)) out[key] = value;
  return out;
}
