// People: the superadmin first, then others; password hashes (argon2id) only.
import { randomUUID } from 'node:crypto';
import type postgres from 'postgres';
import type { Queryable } from './db.js';
import { macHolds, macRow, userMessage, type PrivilegeKey } from './privilege.js';

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
  /** The flag AND its MAC (storage/privilege.ts): a flag set in the database alone is false here. */
  isSuperadmin: boolean;
  /** SHA-256 of the session token's secret part; null for a session opened before tokens had one (matches no token). */
  secretHash: Buffer | null;
}

/** A person's row with what verifies its MAC (the key's wrapped bytes, joined). */
const USER_COLUMNS = 'u.id, u.email, u.password_hash, u.first_name, u.last_name, u.is_superadmin, u.disabled_at, u.created_at, u.updated_at, ' +
  'u.privilege_mac, u.privilege_mac_key_id, k.wrapped as privilege_mac_key_wrapped';

export interface StoredUserRow extends UserRow {
  privilegeMac: Buffer | null;
  privilegeMacKeyId: string | null;
  privilegeMacKeyWrapped: Buffer | null;
}

export function usersStore(sql: Queryable, privilegeKey?: PrivilegeKey) {
  const users = (where: postgres.Fragment, lock = false) =>
    sql<StoredUserRow[]>`select ${sql.unsafe(USER_COLUMNS)} from users u
      left join crypto_keys k on k.id = u.privilege_mac_key_id and k.purpose = 'system'
      where ${where} ${lock ? sql`for update of u` : sql``}`;
  /** MACs the row as written; answers it as read back. */
  const sealed = async (row: UserRow | undefined): Promise<UserRow | undefined> => {
    if (!row) return undefined;
    await macRow(sql, privilegeKey, 'users', row.id, userMessage(row));
    return row;
  };
  const holds = (row: Pick<UserRow, 'id' | 'passwordHash' | 'isSuperadmin'> & { privilegeMac: Buffer | null; privilegeMacKeyId: string | null; privilegeMacKeyWrapped: Buffer | null }) => {
    if (!privilegeKey) return Promise.resolve(false);
    return macHolds(privilegeKey, { mac: row.privilegeMac, macKeyId: row.privilegeMacKeyId, macKeyWrapped: row.privilegeMacKeyWrapped }, userMessage(row));
  };
  return {
    /**
     * Whether the row's password hash and superadmin flag are as the service wrote them
     * (their MAC holds under a key the database does not hold). A login refuses a row
     * for which this is false; no superadmin power comes from it.
     */
    credentialHolds: (row: StoredUserRow) => holds(row),
    /** The flag as it may be obeyed: set AND under a valid MAC. */
    isSuperadmin: async (row: StoredUserRow) => row.isSuperadmin && (await holds(row)),
    async count(): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from users`;
      return row!.n;
    },
    async insert(u: { email: string; passwordHash: string; firstName: string; lastName: string; isSuperadmin: boolean }): Promise<UserRow> {
      const [row] = await sql<UserRow[]>`insert into users (id, email, password_hash, first_name, last_name, is_superadmin)
        values (${randomUUID()}, ${u.email}, ${u.passwordHash}, ${u.firstName}, ${u.lastName}, ${u.isSuperadmin})
        returning id, email, password_hash, first_name, last_name, is_superadmin, disabled_at, created_at, updated_at`;
      return (await sealed(row))!;
    },
    /** Everyone, without password hashes, oldest first. */
    async list(): Promise<Omit<UserRow, 'passwordHash'>[]> {
      return sql<Omit<UserRow, 'passwordHash'>[]>`select id, email, first_name, last_name, is_superadmin, disabled_at, created_at
        from users order by created_at, id`;
    },
    async byEmail(email: string): Promise<StoredUserRow | undefined> {
      const [row] = await users(sql`lower(u.email) = lower(${email})`);
      return row;
    },
    async byId(id: string): Promise<StoredUserRow | undefined> {
      const [row] = await users(sql`u.id = ${id}`);
      return row;
    },
    /** `secretHash`: the SHA-256 of the session token's secret part (never the secret). */
    async insertSession(s: { id: string; secretHash: Buffer; userId: string; expiresAt: Date; ip: string | null }): Promise<void> {
      await sql`insert into user_sessions (id, user_id, expires_at, ip, secret_hash) values (${s.id}, ${s.userId}, ${s.expiresAt}, ${s.ip}, ${s.secretHash})`;
    },
    async liveSession(id: string): Promise<SessionState | undefined> {
      const [row] = await sql<Array<SessionState & Omit<StoredUserRow, 'isSuperadmin'>>>`select s.user_id, s.expires_at, s.secret_hash, u.id,
          u.password_hash, u.is_superadmin, u.privilege_mac, u.privilege_mac_key_id, k.wrapped as privilege_mac_key_wrapped
        from user_sessions s join users u on u.id = s.user_id
        left join crypto_keys k on k.id = u.privilege_mac_key_id and k.purpose = 'system'
        where s.id = ${id} and s.revoked_at is null and s.expires_at > now() and u.disabled_at is null`;
      if (!row) return undefined;
      // Verified as the session is loaded (the caller caches it), not on every request.
      const superadmin = row.isSuperadmin && (await holds(row));
      return { userId: row.userId, expiresAt: row.expiresAt, isSuperadmin: superadmin, secretHash: row.secretHash };
    },
    async revokeSession(id: string): Promise<void> {
      await sql`update user_sessions set revoked_at = now() where id = ${id} and revoked_at is null`;
    },
    async setPassword(id: string, passwordHash: string): Promise<UserRow | undefined> {
      const [row] = await sql<UserRow[]>`update users set password_hash = ${passwordHash}, updated_at = now() where id = ${id}
        returning id, email, password_hash, first_name, last_name, is_superadmin, disabled_at, created_at, updated_at`;
      return sealed(row);
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
    async lockById(id: string): Promise<StoredUserRow | undefined> {
      const [row] = await users(sql`u.id = ${id}`, true);
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
