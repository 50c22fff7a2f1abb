// Custom project roles (project admins): a slug, a name and rules over secrets (see
// access.ts for the rules and the one decision, maySecrets). A change bumps the role's
// version and drops every cached role of the project on every replica after the commit,
// so the members' very next request is decided by the new rules.
import type { Store } from '../../storage/index.js';
import { ROLES } from '../../storage/memberships.js';
import type { ProjectRoleRow } from '../../storage/projectRoles.js';
import { AppError } from '../errors.js';
import { globProblem, isUuid, WIRE_ACTIONS, type AccessControl, type Actor, type ProjectRef, type SecretRule, type SystemActor } from './access.js';
import { topics } from './caches.js';
import { takenMeanwhile } from './cascade.js';
import { normaliseSecretPath } from './paths.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { validateSlug } from './projects.js';
import { validateName } from './text.js';

/** Most rules one role may hold. */
export const MAX_RULES = 100;

export interface RolesDeps {
  store: { projectRoles: Pick<Store['projectRoles'], 'list' | 'bySlug'> };
  access: Pick<AccessControl, 'authorize'>;
  changes: Pick<WritePipeline, 'inProject'>;
}

export interface RoleInput {
  slug?: string;
  name?: string;
  description?: string | null;
  permissions?: unknown[];
}

const RESERVED = new Set<string>([...ROLES, 'custom']);

function validateRoleSlug(raw: string): string {
  const slug = validateSlug(raw.trim());
  if (RESERVED.has(slug)) throw new AppError('VALIDATION', 'slug: Please choose a different slug, the slug you have entered is reserved');
  return slug;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const ENV_SLUG = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Infisical's permission objects (v2 shape) → the rules this service stores. Every field
 * is applied or refused with a 422 naming it: subjects other than 'secrets' (this service
 * has no other), unknown actions and conditions are refused, never dropped.
 */
export function validateRules(input: unknown): SecretRule[] {
  if (!Array.isArray(input)) throw new AppError('VALIDATION', 'permissions must be a list');
  if (input.length > MAX_RULES) throw new AppError('VALIDATION', `permissions may hold at most ${MAX_RULES} rules`);
  return input.map((raw, i) => {
    const at = `permissions.${i}`;
    const bad = (what: string) => new AppError('VALIDATION', `${at}.${what}`);
    if (!isObject(raw)) throw new AppError('VALIDATION', `${at} must be an object`);
    for (const k of Object.keys(raw)) if (!['subject', 'action', 'conditions', 'inverted'].includes(k)) throw bad(`${k} is not supported`);
    if (raw.subject !== 'secrets') throw bad("subject must be 'secrets' (the only subject this service has)");
    const actions = typeof raw.action === 'string' ? [raw.action] : raw.action;
    if (!Array.isArray(actions) || actions.length === 0) throw bad('action must be a non-empty list');
    for (const a of actions) {
      if (typeof a !== 'string' || !Object.hasOwn(WIRE_ACTIONS, a)) throw bad(`action must hold only ${Object.keys(WIRE_ACTIONS).join(', ')}`);
    }
    if (raw.inverted !== undefined && typeof raw.inverted !== 'boolean') throw bad('inverted must be a boolean');
    const rule: SecretRule = { subject: 'secrets', action: [...new Set(actions as string[])], inverted: raw.inverted === true };
    if (raw.conditions !== undefined) {
      if (!isObject(raw.conditions)) throw bad('conditions must be an object');
      const c: NonNullable<SecretRule['conditions']> = {};
      for (const [k, v] of Object.entries(raw.conditions)) {
        if (k === 'environment') {
          const env = isObject(v) && Object.keys(v).length === 1 && '$eq' in v ? v.$eq : v;
          if (typeof env !== 'string' || !ENV_SLUG.test(env)) throw bad('conditions.environment must be an environment slug (or {$eq: slug})');
          c.environment = env;
        } else if (k === 'secretPath') {
          let glob: unknown = v;
          if (isObject(v) && Object.keys(v).length === 1 && ('$glob' in v || '$eq' in v)) glob = v.$glob ?? v.$eq;
          if (typeof glob !== 'string') throw bad('conditions.secretPath must be a path glob (or {$glob: glob} / {$eq: path})');
          const problem = globProblem(glob);
          if (problem) throw bad(`conditions.secretPath ${problem}`);
          // A path without wildcards is compared as the normalised path it names.
          c.secretPath = { $glob: /[*?]/.test(glob) ? glob : normaliseSecretPath(glob) };
        } else {
          throw bad(`conditions.${k} is not supported (environment and secretPath are)`);
        }
      }
      if (c.environment !== undefined || c.secretPath !== undefined) rule.conditions = c;
    }
    return rule;
  });
}

export function rolesDomain(deps: RolesDeps) {
  const { store, access, changes } = deps;
  const admin = (actor: Actor | SystemActor, project: ProjectRef) => access.authorize(actor, project, 'project:admin');
  const notFound = (what: string) => new AppError('NOT_FOUND', `Role ${what} not found`);
  const roleId = (id: string) => {
    if (!isUuid(id)) throw notFound(`with ID '${id}'`);
    return id.toLowerCase();
  };

  return {
    async list(actor: Actor | SystemActor, ref: ProjectRef): Promise<ProjectRoleRow[]> {
      const { project } = await admin(actor, ref);
      return store.projectRoles.list(project.id);
    },

    async bySlug(actor: Actor | SystemActor, ref: ProjectRef, slug: string): Promise<ProjectRoleRow> {
      const { project } = await admin(actor, ref);
      const role = await store.projectRoles.bySlug(project.id, slug);
      if (!role) throw notFound(`with slug '${slug}'`);
      return role;
    },

    async create(actor: Actor | SystemActor, ref: ProjectRef, input: RoleInput, origin?: Origin): Promise<ProjectRoleRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const slug = validateRoleSlug(input.slug ?? '');
      const name = validateName(input.name ?? '', 'name');
      const description = input.description == null ? null : validateDescription(input.description);
      const permissions = validateRules(input.permissions ?? []);
      return grant
        .run(async ({ s, audit }) => {
          if (await s.projectRoles.bySlug(project.id, slug)) throw new AppError('BAD_REQUEST', `A role with slug '${slug}' already exists`);
          const role = await s.projectRoles.insert({ projectId: project.id, slug, name, description, permissions });
          await audit({ eventType: 'create-project-role', projectId: project.id, metadata: { roleId: role.id, slug, name, rules: permissions.length } });
          return role;
        })
        .catch(takenMeanwhile(`A role with slug '${slug}' already exists`));
    },

    async update(actor: Actor | SystemActor, ref: ProjectRef, id: string, input: RoleInput, origin?: Origin): Promise<ProjectRoleRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const rid = roleId(id);
      const slug = input.slug === undefined ? undefined : validateRoleSlug(input.slug);
      const name = input.name === undefined ? undefined : validateName(input.name, 'name');
      const description = input.description === undefined ? undefined : input.description === null ? null : validateDescription(input.description);
      const permissions = input.permissions === undefined ? undefined : validateRules(input.permissions);
      return grant
        .run(async ({ s, audit, invalidate }) => {
          const before = await s.projectRoles.byIdForUpdate(project.id, rid);
          if (!before) throw notFound(`with ID '${id}'`);
          if (slug !== undefined && slug !== before.slug && (await s.projectRoles.bySlug(project.id, slug))) {
            throw new AppError('BAD_REQUEST', `A role with slug '${slug}' already exists`);
          }
          const role = (await s.projectRoles.update(project.id, rid, { slug, name, description, permissions }))!;
          await audit({
            eventType: 'update-project-role',
            projectId: project.id,
            metadata: { roleId: rid, slug: role.slug, ...(slug !== undefined && slug !== before.slug ? { previousSlug: before.slug } : {}), rulesChanged: permissions !== undefined, version: role.version },
          });
          // Every member holding it: their cached role (and its compiled rules) goes on every replica.
          invalidate(topics.projectRoles, project.id);
          return role;
        })
        .catch(takenMeanwhile(`A role with slug '${slug ?? ''}' already exists`));
    },

    /** Deletes a role no membership holds (409 while one does: change those members' role first). */
    async remove(actor: Actor | SystemActor, ref: ProjectRef, id: string, origin?: Origin): Promise<ProjectRoleRow> {
      const grant = await changes.inProject(actor, ref, 'project:admin', origin);
      const { project } = grant;
      const rid = roleId(id);
      return grant.run(async ({ s, audit, invalidate }) => {
        const role = await s.projectRoles.byIdForUpdate(project.id, rid);
        if (!role) throw notFound(`with ID '${id}'`);
        const holders = await s.memberships.countWithCustomRole(rid);
        if (holders > 0) throw new AppError('CONFLICT', `Role '${role.slug}' is assigned to ${holders} member(s); give them another role first`);
        await s.projectRoles.remove(project.id, rid);
        await audit({ eventType: 'delete-project-role', projectId: project.id, metadata: { roleId: rid, slug: role.slug } });
        invalidate(topics.projectRoles, project.id);
        return role;
      });
    },
  };
}
export type RolesDomain = ReturnType<typeof rolesDomain>;

function validateDescription(d: string): string {
  if (d.length > 1000) throw new AppError('VALIDATION', 'description must be at most 1000 characters');
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(d)) throw new AppError('VALIDATION', 'description must not contain control characters');
  return d.trim();
}
