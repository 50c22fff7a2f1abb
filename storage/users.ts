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
  createdAt: Date;
  updatedAt: Date;
}

export interface SessionState {
  userId: string;
  expiresAt: Date;
  isSuperadmin: boolean;
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
      return sql<Omit<UserRow, 'passwordHash'>[]>`select id, email, first_name, last_name, is_superadmin, created_at
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
    async insertSession(s: { id: string; userId: string; expiresAt: Date; ip: string | null }): Promise<void> {
      await sql`insert into user_sessions (id, user_id, expires_at, ip) values (${s.id}, ${s.userId}, ${s.expiresAt}, ${s.ip})`;
    },
    async liveSession(id: string): Promise<SessionState | undefined> {
      const [row] = await sql<SessionState[]>`select s.user_id, s.expires_at, u.is_superadmin from user_sessions s
        join users u on u.id = s.user_id where s.id = ${id} and s.revoked_at is null and s.expires_at > now()`;
      return row;
    },
    async revokeSession(id: string): Promise<void> {
      await sql`update user_sessions set revoked_at = now() where id = ${id} and revoked_at is null`;
    },
  };
}
export type UsersStore = ReturnType<typeof usersStore>;
