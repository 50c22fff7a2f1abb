// Who may do what in a project: identities and users with one role each.
import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { Queryable } from './db.js';
import { tokenAuthMethodsOf } from './identities.js';
import { macHolds, macRow, membershipMessage, PrivilegeKeyError, roleMessage, type MacFields, type PrivilegeKey } from './privilege.js';

export const ROLES = ['admin', 'member', 'viewer', 'no-access'] as const;
export type Role = (typeof ROLES)[number];
/** What a membership row holds: a built-in role, or 'custom' with the custom role's id. */
export type MembershipRole = Role | 'custom';

/** A member's role as access control needs it: the built-in role, or the custom role's rules. */
export interface MemberRoleRecord {
  role: MembershipRole;
  customRoleId: string | null;
  customRoleSlug: string | null;
  /** The custom role's permissions as stored (validated when written); null for a built-in role. */
  permissions: unknown;
  roleVersion: number | null;
  /**
   * A temporary grant's window in epoch milliseconds (null: permanent). Checked at every
   * use (server/domain/access.ts), cached or not: a grant past its end gives nothing.
   */
  activeFrom?: number | null;
  activeUntil?: number | null;
}

/** A temporary grant as Infisical describes it: relative mode, a range (e.g. "1h"), a start; its end is computed. */
export interface TemporaryAccess {
  mode: 'relative';
  range: string;
  startTime: Date;
  endTime: Date;
}

export interface MembershipRow {
  id: string;
  projectId: string;
  identityId: string | null;
  userId: string | null;
  role: MembershipRole;
  customRoleId: string | null;
  temporaryMode: 'relative' | null;
  temporaryRange: string | null;
  temporaryAccessStartTime: Date | null;
  temporaryAccessEndTime: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A temporary grant whose end the audit trail has not recorded yet. */
export interface UnauditedExpiry {
  id: string;
  projectId: string;
  identityId: string | null;
  userId: string | null;
}

export type MemberKind = 'identity' | 'user';

/** A membership with the name of who it is for (identity name, or the user's email and names). */
export interface MembershipView extends MembershipRow {
  identityName: string | null;
  userEmail: string | null;
  userFirstName: string | null;
  userLastName: string | null;
  identityHasUniversalAuth: boolean;
  /** JWT / OIDC auth attached to the identity (storage/jwtAuth.ts); [] for a person. */
  identityTokenAuthMethods: string[];
  customRoleSlug: string | null;
}

/** A membership as roleOf reads it: with what verifies its MAC and its custom role's. */
interface StoredRoleRecord extends Omit<MemberRoleRecord, 'activeFrom' | 'activeUntil'>, MacFields {
  temporaryAccessStartTime: Date | null;
  temporaryAccessEndTime: Date | null;
  projectId: string;
  identityId: string | null;
  userId: string | null;
  roleProjectId: string | null;
  roleMac: Buffer | null;
  roleMacKeyId: string | null;
  roleMacKeyWrapped: Buffer | null;
}

export function membershipsStore(sql: Queryable, privilegeKey?: PrivilegeKey) {
  /** MACs the row as written (storage/privilege.ts); answers it. */
  const sealed = async <R extends MembershipRow | undefined>(row: R): Promise<R> => {
    if (row) await macRow(sql, privilegeKey, 'project_memberships', row.id, membershipMessage(row));
    return row;
  };
  /**
   * The member's role, if its row's MAC holds (and, for a custom role, the role's): a
   * membership or a role's rules written in the database directly are not obeyed (not a member).
   */
  async function verifiedRole(where: postgres.Fragment): Promise<MemberRoleRecord | undefined> {
    if (!privilegeKey) throw new PrivilegeKeyError('read project_memberships');
    const [row] = await sql<StoredRoleRecord[]>`select m.project_id, m.identity_id, m.user_id, m.role, m.custom_role_id,
        m.temporary_access_start_time, m.temporary_access_end_time, m.mac, m.mac_key_id, mk.wrapped as mac_key_wrapped,
        r.slug as custom_role_slug, r.permissions, r.version as role_version, r.project_id as role_project_id,
        r.mac as role_mac, r.mac_key_id as role_mac_key_id, rk.wrapped as role_mac_key_wrapped
      from project_memberships m left join project_roles r on r.id = m.custom_role_id
      left join crypto_keys mk on mk.id = m.mac_key_id and mk.purpose = 'system'
      left join crypto_keys rk on rk.id = r.mac_key_id and rk.purpose = 'system'
      where ${where}`;
    if (!row) return undefined;
    const checks = [macHolds(privilegeKey, row, membershipMessage(row))];
    if (row.customRoleId !== null) {
      checks.push(
        macHolds(
          privilegeKey,
          { mac: row.roleMac, macKeyId: row.roleMacKeyId, macKeyWrapped: row.roleMacKeyWrapped },
          roleMessage({ id: row.customRoleId, projectId: row.roleProjectId ?? '', version: row.roleVersion ?? 0, permissions: row.permissions }),
        ),
      );
    }
    if (!(await Promise.all(checks)).every(Boolean)) return undefined;
    const { role, customRoleId, customRoleSlug, permissions, roleVersion } = row;
    return {
      role,
      customRoleId,
      customRoleSlug,
      permissions,
      roleVersion,
      activeFrom: row.temporaryAccessStartTime?.getTime() ?? null,
      activeUntil: row.temporaryAccessEndTime?.getTime() ?? null,
    };
  }

  const column = (kind: MemberKind) => (kind === 'identity' ? sql`identity_id` : sql`user_id`);
  const views = (where: postgres.Fragment) => sql<MembershipView[]>`select m.*,
      i.name as identity_name, u.email as user_email, u.first_name as user_first_name, u.last_name as user_last_name,
      (ua.identity_id is not null) as identity_has_universal_auth,
      ${sql.unsafe(tokenAuthMethodsOf('m.identity_id'))} as identity_token_auth_methods,
      r.slug as custom_role_slug
    from project_memberships m
    left join project_roles r on r.id = m.custom_role_id
    left join identities i on i.id = m.identity_id
    left join identity_universal_auth ua on ua.identity_id = m.identity_id
    left join users u on u.id = m.user_id
    where ${where}
    order by m.created_at, m.id`;

  return {
    async get(projectId: string, kind: MemberKind, memberId: string): Promise<MembershipView | undefined> {
      const [row] = await views(sql`m.project_id = ${projectId} and m.${column(kind)} = ${memberId}`);
      return row;
    },

    async list(projectId: string, kind: MemberKind): Promise<MembershipView[]> {
      return views(sql`m.project_id = ${projectId} and m.${column(kind)} is not null`);
    },

    /** Plain insert: a second membership of the same member is a unique violation (409). `temporary`: a grant that ends by itself. */
    async insert(
      projectId: string,
      kind: MemberKind,
      memberId: string,
      role: MembershipRole,
      customRoleId: string | null = null,
      temporary: TemporaryAccess | null = null,
    ): Promise<MembershipRow> {
      const [row] = await sql<MembershipRow[]>`insert into project_memberships (id, project_id, ${column(kind)}, role, custom_role_id,
          temporary_mode, temporary_range, temporary_access_start_time, temporary_access_end_time)
        values (${randomUUID()}, ${projectId}, ${memberId}, ${role}, ${customRoleId},
          ${temporary?.mode ?? null}, ${temporary?.range ?? null}, ${temporary?.startTime ?? null}, ${temporary?.endTime ?? null}) returning *`;
      return sealed(row!);
    },

    /** The new role, permanent or (`temporary`) ending by itself; a new window starts its expiry's audit afresh. */
    async updateRole(
      projectId: string,
      kind: MemberKind,
      memberId: string,
      role: MembershipRole,
      customRoleId: string | null = null,
      temporary: TemporaryAccess | null = null,
    ): Promise<MembershipRow | undefined> {
      const [row] = await sql<MembershipRow[]>`update project_memberships set role = ${role}, custom_role_id = ${customRoleId},
          temporary_mode = ${temporary?.mode ?? null}, temporary_range = ${temporary?.range ?? null},
          temporary_access_start_time = ${temporary?.startTime ?? null}, temporary_access_end_time = ${temporary?.endTime ?? null},
          expiry_audited_at = null, updated_at = now()
        where project_id = ${projectId} and ${column(kind)} = ${memberId} returning *`;
      return sealed(row);
    },

    /** Temporary grants past their end whose end the audit trail has not recorded (oldest first, at most `limit`). */
    async unauditedExpiries(limit: number): Promise<UnauditedExpiry[]> {
      return sql<UnauditedExpiry[]>`select id, project_id, identity_id, user_id from project_memberships
        where temporary_access_end_time is not null and expiry_audited_at is null and temporary_access_end_time <= now()
        order by temporary_access_end_time, id limit ${limit}`;
    },

    /**
     * Marks the grant's end as audited; answers the row only the first time (of every
     * replica's sweeps, one records it). Not privilege: the column is outside the MAC.
     */
    async markExpiryAudited(id: string): Promise<MembershipRow | undefined> {
      const [row] = await sql<MembershipRow[]>`update project_memberships set expiry_audited_at = now()
        where id = ${id} and expiry_audited_at is null and temporary_access_end_time is not null and temporary_access_end_time <= now()
        returning *`;
      return row;
    },

    async delete(projectId: string, kind: MemberKind, memberId: string): Promise<MembershipRow | undefined> {
      const [row] = await sql<MembershipRow[]>`delete from project_memberships
        where project_id = ${projectId} and ${column(kind)} = ${memberId} returning *`;
      return row;
    },

    /** The identity's verified role (see verifiedRole); undefined: not a member. */
    roleOfIdentity: (projectId: string, identityId: string) => verifiedRole(sql`m.project_id = ${projectId} and m.identity_id = ${identityId}`),

    /** The person's verified role (see verifiedRole); undefined: not a member. */
    roleOfUser: (projectId: string, userId: string) => verifiedRole(sql`m.project_id = ${projectId} and m.user_id = ${userId}`),

    /** How many memberships hold the custom role (a role in use cannot be deleted). */
    async countWithCustomRole(roleId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from project_memberships where custom_role_id = ${roleId}`;
      return row!.n;
    },

    async upsertIdentity(projectId: string, identityId: string, role: Role): Promise<MembershipRow> {
      const [row] = await sql<MembershipRow[]>`insert into project_memberships (id, project_id, identity_id, role)
        values (${randomUUID()}, ${projectId}, ${identityId}, ${role})
        on conflict (project_id, identity_id) do update set role = excluded.role, custom_role_id = null,
          temporary_mode = null, temporary_range = null, temporary_access_start_time = null, temporary_access_end_time = null, updated_at = now()
        returning *`;
      return sealed(row!);
    },

    async upsertUser(projectId: string, userId: string, role: Role): Promise<MembershipRow> {
      const [row] = await sql<MembershipRow[]>`insert into project_memberships (id, project_id, user_id, role)
        values (${randomUUID()}, ${projectId}, ${userId}, ${role})
        on conflict (project_id, user_id) do update set role = excluded.role, custom_role_id = null,
          temporary_mode = null, temporary_range = null, temporary_access_start_time = null, temporary_access_end_time = null, updated_at = now()
        returning *`;
      return sealed(row!);
    },
  };
}
export type MembershipsStore = ReturnType<typeof membershipsStore>;
