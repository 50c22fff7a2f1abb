// A project's environments: create, rename or re-slug, delete (with what they hold).
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import { isUuid, type Actor, type ProjectRef, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { removeWithSecrets, type ForceOptions } from './cascade.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { projectGone, validateSlug } from './projects.js';
import { validateName } from './text.js';

/** Most environments one project may hold. */
export const MAX_ENVIRONMENTS = 100;

function environmentOf(project: ProjectRecord, envId: string): EnvironmentRow {
  const env = isUuid(envId) ? project.environments.find((e) => e.id === envId.toLowerCase()) : undefined;
  if (!env) throw environmentGone(project, envId);
  return env;
}
const environmentGone = (project: ProjectRecord, envId: string) =>
  new AppError('NOT_FOUND', `Environment with ID '${envId}' in project '${project.slug}' not found`);

export interface EnvironmentsDeps {
  changes: Pick<WritePipeline, 'inProject'>;
}

export function environmentsDomain(deps: EnvironmentsDeps) {
  const { changes } = deps;
  return {
    async create(actor: Actor | SystemActor, ref: ProjectRef, input: { name: string; slug: string }, origin?: Origin): Promise<EnvironmentRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const name = validateName(input.name, 'name');
      const slug = validateSlug(input.slug.trim());
      return grant.run(async ({ s, audit, invalidate }) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw projectGone(project.id);
        const fresh = (await s.projects.byId(project.id))!;
        if (fresh.environments.some((e) => e.slug === slug)) throw new AppError('BAD_REQUEST', `Environment with slug '${slug}' already exists`);
        if (fresh.environments.length >= MAX_ENVIRONMENTS) throw new AppError('BAD_REQUEST', `A project holds at most ${MAX_ENVIRONMENTS} environments`);
        const position = await s.projects.nextEnvironmentPosition(project.id);
        const e = await s.projects.insertEnvironment({ projectId: project.id, name, slug, position });
        await audit({ eventType: 'create-environment', projectId: project.id, environment: slug, metadata: { name } });
        invalidate(topics.project, project.id);
        return e;
      });
    },

    async update(actor: Actor | SystemActor, ref: ProjectRef, envId: string, input: { name?: string; slug?: string }, origin?: Origin): Promise<EnvironmentRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const env = environmentOf(project, envId);
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      const slug = input.slug === undefined ? undefined : validateSlug(input.slug.trim());
      if (name === undefined && slug === undefined) return env;
      // As for projects: compared with the row as locked, not as cached.
      return grant.run(async ({ s, audit, invalidate }) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw projectGone(project.id);
        const fresh = (await s.projects.byId(project.id))!;
        const old = fresh.environments.find((e) => e.id === env.id);
        if (!old) throw environmentGone(project, envId);
        const changes: { name?: string; slug?: string } = {};
        if (name !== undefined && name !== old.name) changes.name = name;
        if (slug !== undefined && slug !== old.slug) changes.slug = slug;
        if (!changes.name && !changes.slug) return old;
        if (changes.slug && fresh.environments.some((e) => e.slug === changes.slug)) {
          throw new AppError('BAD_REQUEST', `Environment with slug '${changes.slug}' already exists`);
        }
        const row = (await s.projects.updateEnvironment(env.id, changes))!;
        await audit({
          eventType: 'update-environment',
          projectId: project.id,
          environment: row.slug,
          metadata: { environmentId: env.id, ...(changes.slug ? { oldSlug: old.slug } : {}), ...(changes.name ? { oldName: old.name, name: row.name } : {}) },
        });
        invalidate(topics.project, project.id);
        invalidate(topics.environment, env.id);
        return row;
      });
    },

    async remove(actor: Actor | SystemActor, ref: ProjectRef, envId: string, opts: ForceOptions = {}, origin?: Origin): Promise<EnvironmentRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const env = environmentOf(project, envId);
      await grant.run(async ({ s, audit, invalidate }) => {
        if (!(await s.projects.lockForUpdate(project.id))) throw projectGone(project.id);
        // The slug as locked, not as cached: the audit names what was deleted.
        const current = (await s.projects.byId(project.id))!.environments.find((e) => e.id === env.id);
        if (!current) throw environmentGone(project, envId);
        await removeWithSecrets(audit, {
          secrets: await s.secrets.inventoryOfFolders(await s.folders.lockEnvironments([env.id])),
          opts,
          what: `Environment '${current.slug}'`,
          remove: () => s.projects.removeEnvironment(env.id),
          entry: { eventType: 'delete-environment', projectId: project.id, environment: current.slug, metadata: { environmentId: env.id } },
        });
        invalidate(topics.project, project.id);
        invalidate(topics.environment, env.id);
      });
      return env;
    },
  };
}
export type EnvironmentsDomain = ReturnType<typeof environmentsDomain>;
