// Export: everything in one folder, opened, for a project admin's download. Recorded in
// the audit trail (environment, path, format, how many; never a value) before the data is
// handed out: an export that cannot be audited does not happen.
import type { Crypto } from '../../crypto/index.js';
import { requireSecrets, type AccessControl, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { normaliseSecretPath } from './paths.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { openSealed, valuesAndComments } from './sealed.js';
import { rowItems } from './secrets.js';
import type { FolderSnapshots } from './snapshots.js';

/** What an export holds: names, values and comments of one folder, and where they came from. */
export interface SecretExport {
  project: { id: string; slug: string };
  environment: string;
  path: string;
  entries: { key: string; value: string; comment: string }[];
}

export interface ExportDeps {
  crypto: Pick<Crypto, 'openMany'>;
  access: Pick<AccessControl, 'environment'>;
  snapshots: FolderSnapshots;
  changes: Pick<WritePipeline, 'inProject'>;
}

export function exportDomain(deps: ExportDeps) {
  const { crypto, access, snapshots, changes } = deps;
  return {
    async exportSecrets(
      actor: Actor | SystemActor,
      input: { project: ProjectRef; environment: string; secretPath?: string; format: string; origin?: Origin },
    ): Promise<SecretExport> {
      const grant = await changes.inProject(actor, input.project, 'project:admin', input.origin);
      const { project } = grant;
      const env = access.environment(project, input.environment);
      const path = normaliseSecretPath(input.secretPath);
      requireSecrets(grant.access, 'readValue', env.slug, path);
      const snap = await snapshots.get(env, path, false);
      const { values, comments } = valuesAndComments(snap.rows, await openSealed(crypto, project, rowItems(project, env, snap.rows)));
      // Recorded, and committed, before anything is handed out.
      await grant.run(({ audit }) =>
        audit({ eventType: 'export-secrets', projectId: project.id, environment: env.slug, secretPath: path, metadata: { format: input.format, count: snap.rows.length } }),
      );
      return {
        project: { id: project.id, slug: project.slug },
        environment: env.slug,
        path,
        entries: snap.rows.map((r, i) => ({ key: r.key, value: values[i]!, comment: comments[i]! })),
      };
    },
  };
}
export type ExportDomain = ReturnType<typeof exportDomain>;
