// The Infisical secret object, field for field: ESO's SDK breaks on a known field with
// the wrong type, so every field here has exactly the contract's type.
import type { SecretView } from '../domain/secrets.js';

// Rows live in the folder cache, so their Date objects recur on every read of the
// operator's hot path; formatting each once saves a measurable share of a list.
const isoOf = new WeakMap<Date, string>();
function iso(d: Date): string {
  let s = isoOf.get(d);
  if (s === undefined) {
    s = d.toISOString();
    isoOf.set(d, s);
  }
  return s;
}

export function secretRaw(s: SecretView) {
  return {
    id: s.id,
    _id: s.id,
    workspace: s.projectId,
    environment: s.environment,
    version: s.version,
    type: 'shared' as const,
    secretKey: s.key,
    secretValue: s.value,
    secretComment: s.comment,
    secretPath: s.path,
    secretValueHidden: s.valueHidden,
    skipMultilineEncoding: s.skipMultilineEncoding,
    tags: [] as never[],
    secretMetadata: [] as never[],
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}
