// Privilege the database holds, under a MAC it cannot make: a person's superadmin flag
// and password hash, a membership's role, a custom role's permissions. Each row carries
// an HMAC-SHA-256 (made in the crypto workers, through the PrivilegeKey the server hands
// in: storage holds no key material) under the client-secret MAC key, the system key the
// canary is sealed with, and names that key's version. A row whose MAC is missing or does
// not hold under the key it names grants nothing: someone with write access to the
// database (and no root key) cannot make a superadmin, a member or a broader role.
//
// What a MAC cannot show: a row put back as it was earlier (a copy of a deleted
// membership, an older password hash), with its MAC of then. A rekey of the MAC key
// (server/cli/rekey.ts) re-MACs every valid row under the new version and retires the
// old one, which ends such copies.
import { timingSafeEqual } from 'node:crypto';
import type { Queryable } from './db.js';

/** A MAC key version: the crypto_keys row (purpose 'system') and its wrapped bytes. */
export interface MacKeyVersion {
  id: string;
  wrapped: Buffer;
}

export interface PrivilegeKey {
  /** HMAC-SHA-256 of `message` under `key`, in the crypto workers (calls made together share a task). */
  mac(key: MacKeyVersion, message: string): Promise<Buffer>;
  /** The same for many messages, in one task. */
  macs(key: MacKeyVersion, messages: string[]): Promise<Buffer[]>;
}

/** A privilege row written or read by a store that was given no key: it refuses (fails closed). */
export class PrivilegeKeyError extends Error {
  override readonly name = 'PrivilegeKeyError';
  constructor(what: string) {
    super(`${what}: this store holds no privilege MAC key, so it cannot ${what.startsWith('write') ? 'MAC' : 'verify'} it`);
  }
}

const USER_LABEL = 'vault-standalone/privilege/user/v1';
const MEMBERSHIP_LABEL = 'vault-standalone/privilege/membership/v1';
const ROLE_LABEL = 'vault-standalone/privilege/role/v1';

/** What a person's MAC covers: who they are, how they prove it, and whether they administer the instance. */
export const userMessage = (u: { id: string; passwordHash: string; isSuperadmin: boolean }) =>
  JSON.stringify([USER_LABEL, u.id, u.passwordHash, u.isSuperadmin]);

const TEMPORARY_MEMBERSHIP_LABEL = 'vault-standalone/privilege/membership/v2-temporary';

/** A membership's time window, as the row holds it (both null: permanent). */
export interface MembershipWindow {
  temporaryAccessStartTime?: Date | null;
  temporaryAccessEndTime?: Date | null;
}

/**
 * What a membership's MAC covers: the project, the member and the role (a custom role by
 * its id); for a temporary grant, also when it starts and ends (so its end cannot be moved
 * by a database writer). A permanent membership's message is the one it had before
 * temporary access existed, so rows MACed then still verify.
 */
export const membershipMessage = (m: { projectId: string; identityId: string | null; userId: string | null; role: string; customRoleId: string | null } & MembershipWindow) =>
  m.temporaryAccessEndTime == null && m.temporaryAccessStartTime == null
    ? JSON.stringify([MEMBERSHIP_LABEL, m.projectId, m.identityId, m.userId, m.role, m.customRoleId])
    : JSON.stringify([
        TEMPORARY_MEMBERSHIP_LABEL,
        m.projectId,
        m.identityId,
        m.userId,
        m.role,
        m.customRoleId,
        m.temporaryAccessStartTime?.getTime() ?? null,
        m.temporaryAccessEndTime?.getTime() ?? null,
      ]);

/**
 * What a custom role's MAC covers: its id, project, version and rules (as postgres.js
 * parses the jsonb back: its key order is jsonb's own, so a read gives the same text).
 */
export const roleMessage = (r: { id: string; projectId: string; version: number; permissions: unknown }) =>
  JSON.stringify([ROLE_LABEL, r.id, r.projectId, r.version, JSON.stringify(r.permissions ?? null)]);

const sameBytes = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/** The current MAC key version: the system key the canary is sealed with. */
export async function currentMacKey(sql: Queryable): Promise<MacKeyVersion> {
  const [row] = await sql<MacKeyVersion[]>`select k.id, k.wrapped from crypto_canary c join crypto_keys k on k.id = c.key_id where c.id = 1`;
  if (!row) throw new Error('the canary (and with it the MAC key) is missing: privilege cannot be MACed');
  return row;
}

/** What a read joins to verify a row: its MAC and the wrapped bytes of the (system) key it names. */
export interface MacFields {
  mac: Buffer | null;
  macKeyId: string | null;
  macKeyWrapped: Buffer | null;
}

/** Does `row`'s MAC hold over `message` under the key it names? False for a missing MAC or key. */
export async function macHolds(key: PrivilegeKey, row: MacFields, message: string): Promise<boolean> {
  if (!row.mac || !row.macKeyId || !row.macKeyWrapped) return false;
  return sameBytes(row.mac, await key.mac({ id: row.macKeyId, wrapped: row.macKeyWrapped }, message));
}

export type PrivilegeTable = 'users' | 'project_memberships' | 'project_roles';

interface TableRow {
  id: string;
  message: string;
  mac: Buffer | null;
  macKeyId: string | null;
  macKeyWrapped: Buffer | null;
}

async function tableRows(sql: Queryable, table: PrivilegeTable): Promise<TableRow[]> {
  switch (table) {
    case 'users': {
      const rows = await sql<Array<{ id: string; passwordHash: string; isSuperadmin: boolean } & MacFields>>`select u.id, u.password_hash,
          u.is_superadmin, u.privilege_mac as mac, u.privilege_mac_key_id as mac_key_id, k.wrapped as mac_key_wrapped
        from users u left join crypto_keys k on k.id = u.privilege_mac_key_id and k.purpose = 'system' order by u.id for update of u`;
      return rows.map((r) => ({ ...r, message: userMessage(r) }));
    }
    case 'project_memberships': {
      const rows = await sql<Array<{ id: string; projectId: string; identityId: string | null; userId: string | null; role: string; customRoleId: string | null } & MembershipWindow & MacFields>>`select
          m.id, m.project_id, m.identity_id, m.user_id, m.role, m.custom_role_id, m.temporary_access_start_time, m.temporary_access_end_time,
          m.mac, m.mac_key_id, k.wrapped as mac_key_wrapped
        from project_memberships m left join crypto_keys k on k.id = m.mac_key_id and k.purpose = 'system' order by m.id for update of m`;
      return rows.map((r) => ({ ...r, message: membershipMessage(r) }));
    }
    case 'project_roles': {
      const rows = await sql<Array<{ id: string; projectId: string; version: number; permissions: unknown } & MacFields>>`select
          r.id, r.project_id, r.version, r.permissions, r.mac, r.mac_key_id, k.wrapped as mac_key_wrapped
        from project_roles r left join crypto_keys k on k.id = r.mac_key_id and k.purpose = 'system' order by r.id for update of r`;
      return rows.map((r) => ({ ...r, message: roleMessage(r) }));
    }
  }
}

async function setMacs(sql: Queryable, table: PrivilegeTable, keyId: string, ids: string[], macs: Buffer[]): Promise<void> {
  if (ids.length === 0) return;
  const hex = macs.map((m) => m.toString('hex'));
  if (table === 'users') {
    await sql`update users u set privilege_mac = decode(v.mac, 'hex'), privilege_mac_key_id = ${keyId}
      from unnest(${ids}::uuid[], ${hex}::text[]) as v(id, mac) where u.id = v.id`;
  } else if (table === 'project_memberships') {
    await sql`update project_memberships m set mac = decode(v.mac, 'hex'), mac_key_id = ${keyId}
      from unnest(${ids}::uuid[], ${hex}::text[]) as v(id, mac) where m.id = v.id`;
  } else {
    await sql`update project_roles r set mac = decode(v.mac, 'hex'), mac_key_id = ${keyId}
      from unnest(${ids}::uuid[], ${hex}::text[]) as v(id, mac) where r.id = v.id`;
  }
}

export const PRIVILEGE_TABLES: readonly PrivilegeTable[] = ['users', 'project_memberships', 'project_roles'];

/**
 * MACs every privilege row under `to`, inside the caller's transaction (the rows are locked).
 * `onlyValid` (a rekey): a row is re-MACed only if its MAC holds under the key it names now,
 * so a row someone edited is not blessed; it keeps its old MAC and key and still grants nothing.
 * Without it (the one upgrade that introduces the MACs, see server/domain/integrity.ts)
 * every row is MACed as it stands. Returns how many rows were MACed and how many were left.
 */
export async function macPrivilegeRows(
  tx: Queryable,
  key: PrivilegeKey,
  to: MacKeyVersion,
  opts: { onlyValid: boolean },
): Promise<{ maced: number; refused: number }> {
  let maced = 0;
  let refused = 0;
  for (const table of PRIVILEGE_TABLES) {
    const rows = await tableRows(tx, table);
    let keep = rows;
    if (opts.onlyValid) {
      const holds = await Promise.all(rows.map((r) => macHolds(key, r, r.message)));
      keep = rows.filter((_, n) => holds[n]);
      refused += rows.length - keep.length;
    }
    const macs = keep.length ? await key.macs(to, keep.map((r) => r.message)) : [];
    await setMacs(tx, table, to.id, keep.map((r) => r.id), macs);
    maced += keep.length;
  }
  return { maced, refused };
}

/** MACs one row just written, under the current MAC key (read in the same transaction). */
export async function macRow(sql: Queryable, key: PrivilegeKey | undefined, table: PrivilegeTable, id: string, message: string): Promise<void> {
  if (!key) throw new PrivilegeKeyError(`write ${table}`);
  const current = await currentMacKey(sql);
  await setMacs(sql, table, current.id, [id], [await key.mac(current, message)]);
}
