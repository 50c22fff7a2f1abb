// Who may do what in a project: identities and users with one role each.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export const ROLES = ['admin', 'member', 'viewer', 'no-access'] as const;
export type Role = (typeof ROLES)[number];

export interface MembershipRow {
  id: string;
  projectId: string;
  identityId: string | null;
  userId: string | null;
  role: Role;
  createdAt: Date;
  updatedAt: Date;
}

export function membershipsStore(sql: Queryable) {
  return {
    async roleOfIdentity(projectId: string, identityId: string): Promise<Role | undefined> {
      const [row] = await sql<{ role: Role }[]>`select role from project_memberships
        where project_id = ${projectId} and identity_id = ${identityId}`;
      return row?.role;
    },

    async roleOfUser(projectId: string, userId: string): Promise<Role | undefined> {
      const [row] = await sql<{ role: Role }[]>`select role from project_memberships
        where project_id = ${projectId} and user_id = ${userId}`;
      return row?.role;
    },

    async upsertIdentity(projectId: string, identityId: string, role: Role): Promise<MembershipRow> {
      const [row] = await sql<MembershipRow[]>`insert into project_memberships (id, project_id, identity_id, role)
        values (${randomUUID()}, ${projectId}, ${identityId}, ${role})
        on conflict (project_id, identity_id) do update set role = excluded.role, updated_at = now()
        returning *`;
      return row!;
    },

    async upsertUser(projectId: string, userId: string, role: Role): Promise<MembershipRow> {
      const [row] = await sql<MembershipRow[]>`insert into project_memberships (id, project_id, user_id, role)
        values (${randomUUID()}, ${projectId}, ${userId}, ${role})
        on conflict (project_id, user_id) do update set role = excluded.role, updated_at = now()
        returning *`;
      return row!;
    },
  };
}
export type MembershipsStore = ReturnType<typeof membershipsStore>;
