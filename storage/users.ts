// People: the superadmin first, then others; password hashes (argon2id) only.
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.js';

export interface UserRow {
  id: string;
  email: string;
  passwordHash: string;
  firstName: string;
  lastName: string;
  isSuperadmin: boolean;
  /** Set while the superadmin has disabled the person. */
  disabledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface SessionState {
  userId: string;
  expiresAt: Date;
  isSuperadmin: boolean;
  /** SHA-256 of the session token's secret part; null for a session opened before tokens had one (matches no token). */
  secretHash: Buffer | null;
}

export function usersStore(sql: Queryable) {
  return {
    async count(): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from users`;
      return row!.n;
    },
    async insert(u: { email: string; passwordHash: string; firstName: string; lastName: string; isSuperadmin: boolean }): Promise<UserRow> {
      const [row] = await sql<UserRow[]>`insert into users (id, email, password_hash, first_name, last_name, is_superadmin)
        values (${randomUUID()}, ${u.email}, ${u.passwordHash}, ${u.firstName}, ${u.lastName}, ${u.isSuperadmin}) returning *`;
      return row!;
    },
    /** Everyone, without password hashes, oldest first. */
    async list(): Promise<Omit<UserRow, 'passwordHash'>[]> {
      return sql<Omit<UserRow, 'passwordHash'>[]>`select id, email, first_name, last_name, is_superadmin, disabled_at, created_at
        from users order by created_at, id`;
    },
    async byEmail(email: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`select * from users where lower(email) = lower(${email})`;
      return row;
    },
    async byId(id: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`select * from users where id = ${id}`;
      return row;
    },
    /** `secretHash`: the SHA-256 of the session token's secret part (never the secret). */
    async insertSession(s: { id: string; secretHash: Buffer; userId: string; expiresAt: Date; ip: string | null }): Promise<void> {
      await sql`insert into user_sessions (id, user_id, expires_at, ip, secret_hash) values (${s.id}, ${s.userId}, ${s.expiresAt}, ${s.ip}, ${s.secretHash})`;
    },
    async liveSession(id: string): Promise<SessionState | undefined> {
      const [row] = await sql<SessionState[]>`select s.user_id, s.expires_at, u.is_superadmin, s.secret_hash from user_sessions s
        join users u on u.id = s.user_id where s.id = ${id} and s.revoked_at is null and s.expires_at > now()
        and u.disabled_at is null`;
      return row;
    },
    async revokeSession(id: string): Promise<void> {
      await sql`update user_sessions set revoked_at = now() where id = ${id} and revoked_at is null`;
    },
    async setPassword(id: string, passwordHash: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`update users set password_hash = ${passwordHash}, updated_at = now() where id = ${id} returning *`;
      return row;
    },
    async setDisabled(id: string, disabled: boolean): Promise<UserRow | undefined> {
      const [row] = disabled
        ? await sql<UserRow[]>`update users set disabled_at = coalesce(disabled_at, now()), updated_at = now() where id = ${id} returning *`
        : await sql<UserRow[]>`update users set disabled_at = null, updated_at = now() where id = ${id} returning *`;
      return row;
    },
    /** Deletes the person; their sessions and project memberships go with them (cascade). */
    async delete(id: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`delete from users where id = ${id} returning *`;
      return row;
    },
    /** The row, locked until the transaction ends (concurrent changes to one person queue). */
    async lockById(id: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`select * from users where id = ${id} for update`;
      return row;
    },
    /** Enabled superadmins, locked: two concurrent disables cannot both pass "not the last". */
    async lockEnabledSuperadmins(): Promise<string[]> {
      const rows = await sql<{ id: string }[]>`select id from users where is_superadmin and disabled_at is null order by id for update`;
      return rows.map((r) => r.id);
    },
    /** Deletes every session row of the person (but `keep`); returns the ids deleted. */
    async deleteSessionsOf(userId: string, keep?: string): Promise<string[]> {
      const rows = keep
        ? await sql<{ id: string }[]>`delete from user_sessions where user_id = ${userId} and id <> ${keep} returning id`
        : await sql<{ id: string }[]>`delete from user_sessions where user_id = ${userId} returning id`;
      return rows.map((r) => r.id);
    },
    /** Projects where the person has a membership (their cached roles). */
    async membershipProjects(userId: string): Promise<string[]> {
      const rows = await sql<{ projectId: string }[]>`select project_id from project_memberships where user_id = ${userId}`;
      return rows.map((r) => r.projectId);
    },
  };
}
export type UsersStore = ReturnType<typeof usersStore>;
