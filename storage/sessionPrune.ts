// People's sessions that can never be used again (revoked, or expired) leave the table,
// so it holds the live ones only (issue 31 point 4). Deleting one changes nothing a
// request sees: a session is accepted only while its row exists, is not revoked and has
// not expired (users.ts liveSession), and nothing makes an expired or revoked one live
// again. The identities' access tokens have their own sweep (identities.ts sweepAccessTokens).
import type { Sql } from './db.js';

const SESSION_PRUNE_LOCK_ID = 74_820_119;

/**
 * Deletes revoked and expired session rows in batches of `batchSize` (no statement holds
 * many row locks); with several replicas one prunes at a time (the others find the
 * advisory lock taken and skip this round). Returns how many went.
 */
export async function pruneUserSessions(sql: Sql, opts: { batchSize?: number } = {}): Promise<number> {
  const batchSize = opts.batchSize ?? 5_000;
  let total = 0;
  for (;;) {
    const deleted = await sql.begin(async (tx) => {
      const [lock] = await tx<{ taken: boolean }[]>`select pg_try_advisory_xact_lock(${SESSION_PRUNE_LOCK_ID}) as taken`;
      if (!lock!.taken) return -1;
      const result = await tx`delete from user_sessions where id in (
          select id from user_sessions where revoked_at is not null or expires_at <= now() limit ${batchSize})`;
      return result.count;
    });
    if (deleted < 0) return total;
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
