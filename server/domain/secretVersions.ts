// A secret's history: every version, opened, newest first; and restoring one as a NEW
// version (history is never rewritten).
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import type { SecretVersionRow } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import { auditActor, isUuid, maySecrets, type AccessControl, type Actor, type ProjectAccess, type SecretAction, type SystemActor } from './access.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { currentRow, openSealed, sealVersion, sealedItems, valuesAndComments, versionRow } from './sealed.js';
import { answersValues, IMMUTABLE_OVERRIDE, REQUIRES_OVERRIDE, secretWritten, writtenView, type SecretView } from './secrets.js';

/** One version of a secret, opened, for the version history. */
export interface SecretVersionView {
  id: string;
  secretId: string;
  projectId: string;
  environment: string;
  path: string;
  version: number;
  key: string;
  value: string;
  comment: string;
  actorType: string;
  actorId: string | null;
  createdAt: Date;
}

export interface SecretVersionsDeps {
  store: { secrets: Pick<Store['secrets'], 'locate' | 'versions'> };
  crypto: Pick<Crypto, 'openMany' | 'sealMany'>;
  access: Pick<AccessControl, 'authorize'>;
  changes: Pick<WritePipeline, 'inProject'>;
}

const versionItems = (projectId: string, environmentId: string, rows: readonly SecretVersionRow[], withValues = true) =>
  sealedItems(projectId, environmentId, rows, (r) => r.secretId, (r) => versionRow(r.secretId, r.version), withValues);

export function secretVersionsDomain(deps: SecretVersionsDeps) {
  const { store, crypto, access, changes } = deps;

  /** The secret named by id: its project (404, then the role check: 403) and environment. */
  async function locate(secretId: string) {
    const loc = isUuid(secretId) ? await store.secrets.locate(secretId.toLowerCase()) : undefined;
    if (!loc) throw notFound(secretId);
    return loc;
  }
  const notFound = (secretId: string) => new AppError('NOT_FOUND', `Secret with ID '${secretId}' not found`);
  /**
   * A grant in the project of a secret named by id: a caller who is not a member (told "not
   * found" for the project) gets the unknown id's answer, which names neither the project
   * nor anything else the id would reveal.
   */
  async function inSecretsProject<T>(secretId: string, p: T | Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound(secretId);
      throw err;
    }
  }
  /**
   * A secret outside what the caller may describe is "not found", as an unknown id (its id
   * must not tell it exists); one it may see but not `action` is a 403.
   */
  function requireOn(scope: ProjectAccess, action: SecretAction, env: EnvironmentRow, path: string, secretId: string) {
    if (!maySecrets(scope, 'describe', env.slug, path)) throw notFound(secretId);
    if (!maySecrets(scope, action, env.slug, path)) throw new AppError('FORBIDDEN', 'You are not allowed to access this resource');
  }
  function environmentOf(project: ProjectRecord, environmentId: string, secretId: string): EnvironmentRow {
    const env = project.environments.find((e) => e.id === environmentId);
    if (!env) throw notFound(secretId);
    return env;
  }

  return {
    /** The version history of a secret named by id, newest first, opened in one task. */
    async list(actor: Actor | SystemActor, secretId: string, page: { offset?: number; limit?: number } = {}): Promise<SecretVersionView[]> {
      const loc = await locate(secretId);
      const { project, access: scope } = await inSecretsProject(secretId, access.authorize(actor, { id: loc.projectId }, 'secrets:read'));
      const env = environmentOf(project, loc.environmentId, secretId);
      requireOn(scope, 'readValue', env, loc.folderPath, secretId);
      const rows = await store.secrets.versions(loc.id, { offset: page.offset ?? 0, limit: page.limit ?? 20 });
      const { values, comments } = valuesAndComments(rows, await openSealed(crypto, project, versionItems(project.id, env.id, rows)));
      return rows.map((r, i) => ({
        id: r.id,
        secretId: r.secretId,
        projectId: project.id,
        environment: env.slug,
        path: loc.folderPath,
        version: r.version,
        key: r.key,
        value: values[i]!,
        comment: comments[i]!,
        actorType: r.actorType,
        actorId: r.actorId,
        createdAt: r.createdAt,
      }));
    },

    /**
     * Makes a NEW version whose name, value and comment equal those of `version`: the old
     * blobs are opened under their own version's AAD and sealed again under the new one's.
     * Restoring what the secret already holds writes nothing (no version, no audit entry):
     * the current version itself, or (for a caller who may read values there, the only
     * one who may learn that two values are equal) a version equal to it. The answer
     * carries the value only under answersValues.
     */
    async restore(
      actor: Actor | SystemActor,
      secretId: string,
      version: number,
      opts: { allowImmutableChange?: boolean; origin?: Origin } = {},
    ): Promise<SecretView> {
      const loc = await locate(secretId);
      // A secret the caller may not even describe is "not found" before its lack of write rights shows.
      const seen = await inSecretsProject(secretId, access.authorize(actor, { id: loc.projectId }, 'secrets:read'));
      requireOn(seen.access, 'describe', environmentOf(seen.project, loc.environmentId, secretId), loc.folderPath, secretId);
      const grant = await inSecretsProject(secretId, changes.inProject(actor, { id: loc.projectId }, 'secrets:write', opts.origin));
      const { project } = grant;
      const env = environmentOf(project, loc.environmentId, secretId);
      requireOn(grant.access, 'edit', env, loc.folderPath, secretId);
      const result = await grant.run(async ({ s, audit, invalidate }) => {
        const cur = await s.secrets.byIdForUpdate(loc.id);
        if (!cur) throw notFound(secretId);
        const old = await s.secrets.version(cur.id, version);
        if (!old) throw new AppError('NOT_FOUND', `Secret '${cur.key}' has no version ${version}`);
        if (old.key !== cur.key && (await s.secrets.byKey(cur.folderId, old.key))) throw new AppError('BAD_REQUEST', 'Secret already exists');
        const reader = answersValues(grant.access, env, loc.folderPath);
        // The current version itself: nothing to write, and its value opened only for a reader's answer.
        const same = old.key === cur.key && old.version === cur.version;
        const withValue = !same || reader;
        const opened = valuesAndComments([old], await openSealed(crypto, project, versionItems(project.id, env.id, [old], withValue)), withValue);
        const value = withValue ? opened.values[0]! : null;
        const comment = opened.comments[0]!;
        let unchanged = same;
        if (!unchanged && reader && old.key === cur.key) {
          const now = valuesAndComments([cur], await openSealed(crypto, project, sealedItems(project.id, env.id, [cur], (r) => r.id, (r) => currentRow(r.id))));
          unchanged = now.values[0] === value && now.comments[0] === comment;
        }
        if (unchanged) return { row: cur, value, comment };
        if (cur.immutable && !opts.allowImmutableChange) {
          throw new AppError('CONFLICT', `Secret '${cur.key}' must never change; an explicit override is required to restore a version`, REQUIRES_OVERRIDE);
        }
        const next = cur.version + 1;
        const at = { projectId: project.id, environmentId: env.id, folderId: cur.folderId, secretId: cur.id, key: old.key, version: next };
        const { valueBlob, commentBlob, dataKeyId } = await sealVersion(crypto, s, project, at, value!, comment);
        const row = await s.secrets.update({ id: cur.id, key: old.key, version: next, valueBlob, commentBlob, dataKeyId, ...auditActor(actor) });
        await secretWritten({ s, audit, invalidate }, { project, env, path: loc.folderPath, folderId: cur.folderId }, {
          eventType: 'restore-secret-version',
          secretKey: old.key,
          secretVersion: next,
          metadata: { restoredFrom: old.version, ...(old.key !== cur.key ? { renamedFrom: cur.key } : {}), ...(cur.immutable ? IMMUTABLE_OVERRIDE : {}) },
        });
        return { row, value, comment };
      });
      return writtenView(grant.access, project, env, result.row, loc.folderPath, result.value, result.comment);
    },
  };
}
export type SecretVersionsDomain = ReturnType<typeof secretVersionsDomain>;
