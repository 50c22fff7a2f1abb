// Deletes that take secrets along (a project, an environment, a folder): the force rule,
// and one audit entry per secret removed.
import type { SecretInventoryRow } from '../../storage/secrets.js';
import { isUniqueViolation } from '../../storage/errors.js';
import { AppError } from '../errors.js';
import type { AuditEntry, Change } from './pipeline.js';
import { IMMUTABLE_OVERRIDE, REQUIRES_FORCE, REQUIRES_OVERRIDE } from './secrets.js';

export interface ForceOptions {
  force?: boolean;
  /** Also needed when the secrets to delete include keys marked as never changing. */
  overrideImmutable?: boolean;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Deleting what holds secrets needs an explicit `force=true`, and `overrideImmutable=true`
 * as well when any of them must never change.
 */
export function refuseUnlessForced(secrets: readonly SecretInventoryRow[], opts: ForceOptions, what: string) {
  if (secrets.length > 0 && !opts.force) {
    throw new AppError('CONFLICT', `${what} holds ${plural(secrets.length, 'secret')}; pass force=true to delete it with them`, REQUIRES_FORCE);
  }
  const protectedCount = secrets.filter((x) => x.immutable).length;
  if (protectedCount > 0 && !opts.overrideImmutable) {
    throw new AppError(
      'CONFLICT',
      `${what} holds ${plural(protectedCount, 'secret')} marked as never changing; pass overrideImmutable=true as well to delete ${protectedCount === 1 ? 'it' : 'them'}`,
      REQUIRES_OVERRIDE,
    );
  }
}

/**
 * One `delete-secret` entry per secret a cascading delete removes (name, path,
 * environment, version; never a value), in the delete's transaction.
 */
export async function auditCascade(
  audit: Change['audit'],
  projectId: string,
  slugOf: (environmentId: string) => string,
  secrets: readonly SecretInventoryRow[],
  cascade: 'delete-project' | 'delete-environment' | 'delete-folder',
) {
  for (const x of secrets) {
    await audit({
      eventType: 'delete-secret',
      projectId,
      environment: slugOf(x.environmentId),
      secretPath: x.folderPath,
      secretKey: x.key,
      secretVersion: x.version,
      metadata: { cascade, ...(x.immutable ? IMMUTABLE_OVERRIDE : {}) },
    });
  }
}

/**
 * A delete that takes secrets along, in its transaction: refused unless forced, then
 * `remove`, one `delete-secret` entry per secret it took, and the delete's own `entry`
 * with `secretsDeleted` added to its metadata.
 */
export async function removeWithSecrets(
  audit: Change['audit'],
  d: {
    secrets: readonly SecretInventoryRow[];
    opts: ForceOptions;
    /** How the refusal names what would be deleted ("Folder '/apps'"). */
    what: string;
    remove: () => Promise<unknown>;
    entry: AuditEntry & { eventType: 'delete-environment' | 'delete-folder'; projectId: string; environment: string; metadata: Record<string, string> };
  },
) {
  refuseUnlessForced(d.secrets, d.opts, d.what);
  await d.remove();
  const { entry } = d;
  await auditCascade(audit, entry.projectId, () => entry.environment, d.secrets, entry.eventType);
  await audit({ ...entry, metadata: { ...entry.metadata, secretsDeleted: d.secrets.length } });
}

/**
 * Rethrows a unique-index refusal (a concurrent request took the name between our check
 * and our insert) as the answer the check itself would have given.
 */
export function takenMeanwhile(message: string) {
  return (err: unknown): never => {
    if (isUniqueViolation(err)) throw new AppError('BAD_REQUEST', message);
    throw err;
  };
}
