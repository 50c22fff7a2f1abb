// The Infisical secret object, field for field: ESO's SDK breaks on a known field with
// the wrong type, so every field here has exactly the contract's type.
import type { SecretView } from '../domain/secrets.js';

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
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}
