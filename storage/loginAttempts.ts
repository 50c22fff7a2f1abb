// Administrator login attempts per e-mail key (an HMAC of the address; see the domain).
// An attempt is claimed before its password is checked, so parallel guesses cannot
// all read "not locked" and then all be verified.
import type { Queryable } from './db.js';

export type Claim = { claimed: true } | { claimed: false; retryAfterSeconds: number };

/** Rows purged per login: bounded, so one login never pays for a whole backlog. */
const PURGE_BATCH = 100;

export function loginAttemptsStore(sql: Queryable, beforeWrite?: () => Promise<void>) {
  return {
    /**
     * One statement: counts an attempt unless `maxAttempts` were already claimed within
     * the last `lockSeconds` (the lock runs from the last claimed attempt); attempts older
     * than that start the count again. Refused: how long the lock still holds.
     */
    async claim(emailKey: Buffer, maxAttempts: number, lockSeconds: number): Promise<Claim> {
      await beforeWrite?.();
      const [row] = await sql<{ claimed: boolean; retryAfterSeconds: number | null }[]>`
        with claim as (
          insert into login_attempts as a (email_key, attempts, last_attempt_at) values (${emailKey}, 1, now())
          on conflict (email_key) do update set
            attempts = case when a.last_attempt_at <= now() - make_interval(secs => ${lockSeconds}) then 1 else a.attempts + 1 end,
            last_attempt_at = now()
          where a.attempts < ${maxAttempts} or a.last_attempt_at <= now() - make_interval(secs => ${lockSeconds})
          returning 1
        )
        select exists (select 1 from claim) as claimed,
          (select greatest(1, ceil(extract(epoch from l.last_attempt_at + make_interval(secs => ${lockSeconds}) - now())))::int
            from login_attempts l where l.email_key = ${emailKey}) as retry_after_seconds`;
      return row!.claimed ? { claimed: true } : { claimed: false, retryAfterSeconds: row!.retryAfterSeconds ?? 1 };
    },

    /**
     * Drops a few rows whose attempts no longer count, so guessed addresses do not pile
     * up. Skips rows another statement holds: it never waits, so it cannot deadlock
     * with a claim.
     */
    async purgeStale(lockSeconds: number): Promise<void> {
      await beforeWrite?.();
      await sql`delete from login_attempts where email_key in (
          select email_key from login_attempts where last_attempt_at <= now() - make_interval(secs => ${lockSeconds})
          limit ${PURGE_BATCH} for update skip locked)`;
    },

    /** A successful login forgets the address's attempts. */
    async reset(emailKey: Buffer): Promise<void> {
      await sql`delete from login_attempts where email_key = ${emailKey}`;
    },
  };
}
export type LoginAttemptsStore = ReturnType<typeof loginAttemptsStore>;
