// Who may do what: the project an actor names is resolved first (404), then the
// actor's role in it is checked (403), as Infisical orders them.
import type { Store } from '../../storage/index.js';
import type { MemberRoleRecord, Role } from '../../storage/memberships.js';
import type { EnvironmentRow, ProjectRecord } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import type { Caches } from './caches.js';

export type Actor = { kind: 'identity'; identityId: string } | { kind: 'user'; userId: string; superadmin?: boolean; sessionId?: string };
/** The service itself (start-up, CLI, tests' set-up): not subject to roles, still audited. */
export type SystemActor = { kind: 'system' };
export const SYSTEM: SystemActor = { kind: 'system' };

/** Who an audit entry names. */
export interface AuditActor {
  actorType: 'user' | 'identity' | 'system';
  actorId: string | null;
}

export function auditActor(actor: Actor | SystemActor): AuditActor {
  if (actor.kind === 'identity') return { actorType: 'identity', actorId: actor.identityId };
  if (actor.kind === 'user') return { actorType: 'user', actorId: actor.userId };
  return { actorType: 'system', actorId: null };
}

/** Only the superadmin (and the service itself) administers the organization. */
export function requireOrgAdmin(actor: Actor | SystemActor): void {
  if (actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin)) return;
  throw new AppError('FORBIDDEN', 'You are not allowed to access this resource');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

export type Permission = 'secrets:read' | 'secrets:write' | 'project:admin';

// -- rules ---------------------------------------------------------------------------
//
// A role is a list of rules over secrets: actions, an environment (or any), a secret-path
// glob (or any), allowed or denied; a deny that matches wins over every allow. The four
// built-in roles are rules too (BUILT_IN_RULES). Rules are compiled once per role version
// (globs to anchored regular expressions); the decision is `maySecrets`.

export const SECRET_ACTIONS = ['describe', 'readValue', 'create', 'edit', 'delete'] as const;
export type SecretAction = (typeof SECRET_ACTIONS)[number];

/** One rule as stored and as the roles API answers it (Infisical's permission shape, subject 'secrets'). */
export interface SecretRule {
  subject: 'secrets';
  /** Infisical's action names: describeSecret, readValue, read (= both), create, edit, delete. */
  action: string[];
  conditions?: { environment?: string; secretPath?: { $glob: string } };
  inverted?: boolean;
}

/** Infisical's action names on the wire → ours. */
export const WIRE_ACTIONS: Record<string, SecretAction[]> = {
  read: ['describe', 'readValue'],
  describeSecret: ['describe'],
  readValue: ['readValue'],
  create: ['create'],
  edit: ['edit'],
  delete: ['delete'],
};

const BIT: Record<SecretAction, number> = { describe: 1, readValue: 2, create: 4, edit: 8, delete: 16 };
const ALL_BITS = 31;

const ALL_ACTIONS: SecretRule = { subject: 'secrets', action: ['read', 'create', 'edit', 'delete'] };
export const BUILT_IN_RULES: Record<Role, SecretRule[]> = {
  admin: [ALL_ACTIONS],
  member: [ALL_ACTIONS],
  viewer: [{ subject: 'secrets', action: ['read'] }],
  'no-access': [],
};

/** Characters a secret-path glob may hold: a path's own (letters, digits, _ . -) and * ? as wildcards. */
const GLOB_CHARS = /^\/[A-Za-z0-9_.\-/*?]*$/;

/** Why `glob` is not a secret-path glob, or null. */
export function globProblem(glob: string): string | null {
  if (glob.length > 1024) return 'is longer than 1024 characters';
  if (!GLOB_CHARS.test(glob)) return 'must start with "/" and hold only letters, digits, _ . - / and the wildcards * ? **';
  if (glob.includes('//')) return 'must not hold an empty segment';
  if (glob.split('/').some((seg) => seg.includes('**') && seg !== '**')) return 'may use ** only as a whole segment';
  return null;
}

/**
 * A secret-path glob as an anchored expression over a path WITHOUT its trailing root
 * slash ('/' is matched as ''): `*` and `?` stay inside one segment, `**` is any number
 * of whole segments, zero included. So '/app/**' is /app and everything below it, '/' is
 * the root folder alone and '/**' every folder.
 */
export function compileGlob(glob: string): RegExp {
  const segs = glob.replace(/\/+$/, '').split('/').slice(1);
  let re = '';
  for (const seg of segs) {
    if (seg === '**') re += '(?:/[^/]+)*';
    else re += '/' + seg.replace(/[.-]/g, (c) => `\\${c}`).replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
  }
  return new RegExp(`^${re}$`);
}

interface CompiledRule {
  bits: number;
  environment: string | null;
  path: RegExp | null;
}

export interface CompiledRules {
  /** Actions allowed everywhere by a rule without conditions, and denied nowhere: decided without matching. */
  anywhere: number;
  allow: CompiledRule[];
  deny: CompiledRule[];
}

export function compileRules(rules: readonly SecretRule[]): CompiledRules {
  const allow: CompiledRule[] = [];
  const deny: CompiledRule[] = [];
  for (const r of rules) {
    let bits = 0;
    for (const a of r.action) for (const x of WIRE_ACTIONS[a] ?? []) bits |= BIT[x];
    // Whoever reads a value sees the name; whoever may not see a name reads no value.
    if (!r.inverted && bits & BIT.readValue) bits |= BIT.describe;
    if (r.inverted && bits & BIT.describe) bits |= BIT.readValue;
    const glob = r.conditions?.secretPath?.$glob;
    const c: CompiledRule = { bits, environment: r.conditions?.environment ?? null, path: glob === undefined ? null : compileGlob(glob) };
    (r.inverted ? deny : allow).push(c);
  }
  let anywhere = 0;
  for (const a of allow) if (a.environment === null && a.path === null) anywhere |= a.bits;
  for (const d of deny) anywhere &= ~d.bits;
  return { anywhere, allow, deny };
}

const matches = (r: CompiledRule, environment: string, path: string) =>
  (r.environment === null || r.environment === environment) && (r.path === null || r.path.test(path));

/** What an actor may do with secrets in one project. */
export interface ProjectAccess {
  /** The role's slug (built-in or custom). */
  role: string;
  rules: CompiledRules;
}

export const UNRESTRICTED: ProjectAccess = { role: 'admin', rules: { anywhere: ALL_BITS, allow: [], deny: [] } };

/** THE decision: may `access` do `action` on the secrets of `environment` at `secretPath` (normalised)? */
export function maySecrets(access: ProjectAccess, action: SecretAction, environment: string, secretPath: string): boolean {
  const bit = BIT[action];
  const { rules } = access;
  if (rules.anywhere & bit) return true;
  const path = secretPath === '/' ? '' : secretPath;
  for (const d of rules.deny) if (d.bits & bit && matches(d, environment, path)) return false;
  for (const a of rules.allow) if (a.bits & bit && matches(a, environment, path)) return true;
  return false;
}

/** May `access` read the values of the secrets of `environment` at `secretPath` (imports and references use this). */
export const mayReadSecrets = (access: ProjectAccess, environment: string, secretPath: string) => maySecrets(access, 'readValue', environment, secretPath);

export const FORBIDDEN_MESSAGE = 'You are not allowed to access this resource';

/** 403 unless `maySecrets`; the answer is the same whether or not anything exists there. */
export function requireSecrets(access: ProjectAccess, action: SecretAction, environment: string, secretPath: string): void {
  if (!maySecrets(access, action, environment, secretPath)) throw new AppError('FORBIDDEN', FORBIDDEN_MESSAGE);
}

/**
 * 403 unless the caller may `action` AND describe the secrets of `environment` at
 * `secretPath`: every write's answer tells whether a name exists there (200, 404 "not
 * found", 400 "already exists"), so a caller who may not see the names there is refused
 * before anything is looked up, and existing and missing names answer alike.
 */
export function requireSecretsWrite(access: ProjectAccess, action: SecretAction, environment: string, secretPath: string): void {
  requireSecrets(access, 'describe', environment, secretPath);
  requireSecrets(access, action, environment, secretPath);
}

/** Is everything of this environment allowed for `actions` (the hot path skips per-folder checks)? */
export function unrestrictedFor(access: ProjectAccess, ...actions: SecretAction[]): boolean {
  return actions.every((a) => (access.rules.anywhere & BIT[a]) !== 0);
}

// Compiled rules per custom role version: many members share one role.
const compiledByVersion = new Map<string, CompiledRules>();
const MAX_COMPILED = 1_000;
const builtIn = Object.fromEntries(Object.entries(BUILT_IN_RULES).map(([k, v]) => [k, compileRules(v)])) as Record<Role, CompiledRules>;

/** The access a membership row gives. */
export function accessOf(m: MemberRoleRecord): ProjectAccess {
  if (m.role !== 'custom') return { role: m.role, rules: builtIn[m.role] };
  const key = `${m.customRoleId}:${m.roleVersion}`;
  let rules = compiledByVersion.get(key);
  if (!rules) {
    rules = compileRules(Array.isArray(m.permissions) ? (m.permissions as SecretRule[]) : []);
    if (compiledByVersion.size >= MAX_COMPILED) compiledByVersion.clear();
    compiledByVersion.set(key, rules);
  }
  return { role: m.customRoleSlug ?? 'custom', rules };
}

/** Is a (temporary) grant in force at `now` (epoch ms)? A permanent one always is. */
export function withinWindow(m: Pick<MemberRoleRecord, 'activeFrom' | 'activeUntil'>, now: number): boolean {
  return (m.activeFrom == null || now >= m.activeFrom) && (m.activeUntil == null || now < m.activeUntil);
}

/** The project-wide check of a membership: custom roles never administer the project. */
function grants(m: MemberRoleRecord, a: ProjectAccess, p: Permission): boolean {
  if (m.role !== 'custom') return GRANTS[m.role].has(p);
  if (p === 'project:admin') return false;
  const bits = a.rules.allow.reduce((n, r) => n | r.bits, a.rules.anywhere);
  return p === 'secrets:read' ? bits !== 0 : (bits & (BIT.create | BIT.edit | BIT.delete)) !== 0;
}

const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(['secrets:read', 'secrets:write', 'project:admin']),
  member: new Set(['secrets:read', 'secrets:write']),
  viewer: new Set(['secrets:read']),
  'no-access': new Set(),
};

export const can = (role: Role, p: Permission) => GRANTS[role].has(p);

export type ProjectRef = { slug: string } | { id: string };

/** What authorize answers: the project, the actor's role in it, and what it may do with its secrets. */
export interface Authorized {
  project: ProjectRecord;
  role: string;
  access: ProjectAccess;
}

/** `now`: the clock a temporary grant's window is checked by, the database's (storage/clock.ts). */
export function accessControl(deps: { store: Pick<Store, 'projects' | 'memberships'>; caches: Pick<Caches, 'projects' | 'roles'>; now?: () => number }) {
  const { store, caches } = deps;
  const now = deps.now ?? Date.now;

  const projectKey = (ref: ProjectRef) => ('slug' in ref ? `slug:${ref.slug}` : `id:${ref.id}`);
  const roleKey = (projectId: string, actor: Actor) => `${projectId}:${actor.kind}:${actor.kind === 'identity' ? actor.identityId : actor.userId}`;

  /**
   * The answer to a project that does not exist, and to one the caller is not a member of:
   * the same status and message (it names only what the caller sent), so a project of
   * another team cannot be told from a missing one.
   */
  const projectNotFound = (ref: ProjectRef) =>
    new AppError('NOT_FOUND', 'slug' in ref ? `Project with slug '${ref.slug}' not found` : `Project with ID '${ref.id}' not found`);

  async function project(ref: ProjectRef): Promise<ProjectRecord> {
    const found =
      'slug' in ref
        ? await caches.projects.get(projectKey(ref), async () => (await store.projects.bySlug(ref.slug)) ?? null)
        : await caches.projects.get(projectKey(ref), async () =>
            isUuid(ref.id) ? ((await store.projects.byId(ref.id.toLowerCase())) ?? null) : null,
          );
    if (!found) throw projectNotFound(ref);
    return found;
  }

  async function roleOf(projectId: string, actor: Actor): Promise<MemberRoleRecord | null> {
    const id = actor.kind === 'identity' ? actor.identityId : actor.userId;
    return caches.roles.get(roleKey(projectId, actor), async () => {
      const role =
        actor.kind === 'identity'
          ? await store.memberships.roleOfIdentity(projectId, id)
          : await store.memberships.roleOfUser(projectId, id);
      return role ?? null;
    });
  }

  /**
   * The service itself and the instance's superadmin administer every project. (False
   * only ever for an Actor: the service always administers, so that is what it narrows.)
   */
  const administersAll = (actor: Actor | SystemActor): actor is SystemActor => actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin === true);

  /** The membership's answer to `permission` in project `p` (403 unless it grants it). */
  function decide(p: ProjectRecord, m: MemberRoleRecord, permission: Permission): Authorized {
    // A temporary grant outside its window gives nothing: checked at every use (the cached
    // record carries the window), so it ends at once on every replica, audited or not yet.
    if (!withinWindow(m, now())) throw new AppError('FORBIDDEN', FORBIDDEN_MESSAGE);
    const access = accessOf(m);
    if (!grants(m, access, permission)) throw new AppError('FORBIDDEN', FORBIDDEN_MESSAGE);
    return { project: p, role: access.role, access };
  }

  async function authorizeLoading(actor: Actor | SystemActor, ref: ProjectRef, permission: Permission): Promise<Authorized> {
    const p = await project(ref);
    if (administersAll(actor)) return { project: p, role: 'admin', access: UNRESTRICTED };
    const m = await roleOf(p.id, actor);
    // Not a member: as if there were no such project (a member without rights gets the 403).
    if (!m) throw projectNotFound(ref);
    return decide(p, m, permission);
  }

  return {
    project,
    roleOf,
    /**
     * Resolves the project and demands `permission` in it; answers what the actor may do
     * with its secrets. With the project and the actor's role held (the hot path) the
     * answer is a value, not a promise; a refusal is always a rejected promise.
     */
    authorize(actor: Actor | SystemActor, ref: ProjectRef, permission: Permission): Authorized | Promise<Authorized> {
      try {
        // A held absence (null) takes the slow path, which answers it.
        const p = caches.projects.peek(projectKey(ref));
        if (p) {
          if (administersAll(actor)) return { project: p, role: 'admin', access: UNRESTRICTED };
          const m = caches.roles.peek(roleKey(p.id, actor));
          if (m) return decide(p, m, permission);
        }
      } catch (err) {
        return Promise.reject(err);
      }
      return authorizeLoading(actor, ref, permission);
    },

    environment(project: ProjectRecord, slug: string): EnvironmentRow {
      const env = project.environments.find((e) => e.slug === slug);
      if (!env) throw new AppError('NOT_FOUND', `Environment with slug '${slug}' in project '${project.slug}' not found`);
      return env;
    },
  };
}
export type AccessControl = ReturnType<typeof accessControl>;
