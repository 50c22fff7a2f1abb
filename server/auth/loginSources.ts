// Where login attempts come from, and how much password hashing each source may cause.
//
// Failed logins are counted per (account, source), so a stranger's guesses lock out only
// the stranger's source: the owner, from anywhere else, still logs in. A source is the
// client address (server/http/clientAddress.ts, which honours TRUSTED_PROXIES); an IPv6
// client's whole /64 is one source (one host commonly holds all of it).
//
// The per-source budget bounds the argon2 work one source can cause (user login, password
// change, first signup), whatever account it names: an attempt takes from its source's
// budget before any argon2 work, and gets it back when it turns out to need none (its
// account was locked) or succeeds. It lives in each replica's memory: what it protects is
// that replica's CPU (argon2 runs on the replica that took the request), it costs no round
// trip and keeps working while the database or Redis is slow or down. With N replicas a
// source may cause N budgets' worth in all, each replica at most one; the guesses per
// account and source stay bounded by the shared counter in the database.
import { normalizeAddress } from '../http/clientAddress.js';

/** The source of an attempt: an IPv4 address, an IPv6 /64 (`2001:db8:1:2::/64`), or `unknown`. */
export function loginSource(ip: string | null | undefined): string {
  const a = ip ? normalizeAddress(ip) : undefined;
  if (a === undefined) return 'unknown';
  if (!a.includes(':')) return a;
  // Canonical (compressed) text: expand, keep the first four groups.
  const [head, tail] = a.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export interface SourceBudget {
  /** Takes one attempt from the source's budget: 0 when taken, else the seconds until it has one again. */
  take(source: string): number;
  /** Gives one attempt back (no argon2 work was needed, or the attempt succeeded). */
  refund(source: string): void;
  /** Drops sources whose window has ended; returns how many. */
  sweep(): number;
  readonly size: number;
}

/** How many sources are remembered at most (~100 B each); the oldest goes first. */
export const SOURCE_BUDGET_MAX_SOURCES = 100_000;

/**
 * A fixed window per source: at most `max` attempts within `windowSeconds` of its first.
 * Synchronous, so a parallel burst cannot outrun it.
 */
export function sourceBudget(opts: { max: number; windowSeconds: number; maxSources?: number; now?: () => number }): SourceBudget {
  const now = opts.now ?? Date.now;
  const maxSources = opts.maxSources ?? SOURCE_BUDGET_MAX_SOURCES;
  const sources = new Map<string, { used: number; until: number }>();
  return {
    take(source) {
      const t = now();
      let e = sources.get(source);
      if (e === undefined || e.until <= t) {
        if (e !== undefined) sources.delete(source);
        else if (sources.size >= maxSources) sources.delete(sources.keys().next().value!);
        sources.set(source, (e = { used: 0, until: t + opts.windowSeconds * 1000 }));
      }
      if (e.used >= opts.max) return Math.max(1, Math.ceil((e.until - t) / 1000));
      e.used++;
      return 0;
    },
    refund(source) {
      const e = sources.get(source);
      if (e !== undefined && e.used > 0) e.used--;
    },
    sweep() {
      const t = now();
      let n = 0;
      for (const [k, e] of sources) {
        if (e.until <= t) {
          sources.delete(k);
          n++;
        }
      }
      return n;
    },
    get size() {
      return sources.size;
    },
  };
}
