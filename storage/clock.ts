// The one clock of everything time-bound: the database's.
//
// Replicas' wall clocks disagree (an unsynchronised host, a clock stepped by NTP); the
// database is the one thing every replica shares. Whatever a token, a session, a lockout
// or a temporary grant is issued with, and whatever it is checked against, is the
// database's time: in SQL, now(); in the process, this clock, read from the database.
//
// The clock is sampled (`select clock_timestamp()`) at start and every SYNC_MS after, and
// between samples it advances by the process's monotonic clock (performance.now()), so a
// step of this host's wall clock changes nothing. Its error against the database's now()
// is half a round trip plus the monotonic drift since the last sample (milliseconds).
// While the database does not answer the last sample stands (the monotonic clock keeps it
// moving).
import type { Queryable } from './db.js';

/** How often the clock is read from the database again. */
export const CLOCK_SYNC_MS = 30_000;

export interface DbClock {
  /** The database's time now (milliseconds since the epoch), as estimated from the last sample. */
  now(): number;
  /** Reads the database's time again (rejects when it does not answer; the last sample stands). */
  sync(): Promise<void>;
  /** This host's wall clock minus the database's, at the last sample (milliseconds): for the metric and the log. */
  readonly hostSkewMs: number;
}

export function dbClock(sql: Queryable): DbClock {
  // Until the first sample: this host's wall clock (the service samples before it serves).
  let base = Date.now();
  let at = performance.now();
  let skew = 0;
  return {
    now: () => base + (performance.now() - at),
    async sync() {
      const sent = performance.now();
      const [row] = await sql<{ ms: number }[]>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`;
      const back = performance.now();
      base = row!.ms;
      at = (sent + back) / 2;
      skew = Date.now() - (base + (performance.now() - at));
    },
    get hostSkewMs() {
      return skew;
    },
  };
}
