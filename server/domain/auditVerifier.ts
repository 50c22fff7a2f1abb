// Verifying the audit chain without blocking anyone (issue 31 point 9, issue 32 point 3):
//
// - On request (the verify route, the admin UI's Audit tab): an incremental walk from the
//   newest keyed checkpoint, or from the point this replica verified last (kept in its
//   memory), to the head; the visit waits for it at most `waitMs`.
// - In the background: a full walk of every entry and every checkpoint
//   (storage/auditCheckpoints.ts verifyFull) at start-up, every `fullIntervalMs`, and when
//   a superadmin asks (POST …/audit-logs/verify, `audit-verify` on a running embedded
//   service); in short statements with a turn of the event loop between them, never on
//   another caller's request path. Its verdict is stored MACed under the audit key and
//   answered beside the incremental one: the chain is reported broken if either found a
//   break, so an edit or deletion older than the newest checkpoint is named too.
import { randomUUID } from 'node:crypto';
import type { AuditBreak, AuditVerification } from '../../storage/audit.js';
import type { ChainPoint, FullVerification, FullVerifyRecord, IncrementalVerification } from '../../storage/auditCheckpoints.js';
import type { Store } from '../../storage/index.js';
import { headSummary, type AuditHeadSummary } from './audit.js';

/** When the incremental verdict was reached, how old it is, whether a walk is running now, and where it started. */
export interface VerifyFreshness {
  checkedAt: string;
  ageSeconds: number;
  inProgress: boolean;
  /** The last entry id of the checkpoint (or this replica's last verified point) the verdict continued from (0: from the first entry). */
  verifiedFrom: number;
}

type Broken = Extract<AuditVerification, { ok: false }>;

/** The latest full walk, as the route reports it. */
export interface FullWalkSummary {
  runId: string;
  startedAt: string;
  finishedAt: string;
  ageSeconds: number;
  ok: boolean;
  entries: number;
  /** Entries read (those online: retention's archived ones are not). */
  read: number;
  checkpoints: number;
  brokenAt: number | null;
  reason: string | null;
  anchored?: { entries: number; lastId: number };
  found?: { entries: number; lastId: number };
}

export interface FullWalkStatus {
  /** The latest finished walk (this replica's or the stored one, whichever is newer); null: none yet. */
  last: FullWalkSummary | null;
  /** The stored verdict's MAC does not hold: it was forged or edited. */
  recordInvalid?: true;
  /** A walk running on this replica now. */
  running: { runId: string; startedAt: string; entries: number; of: number } | null;
}

/** The route's answer: the verdict (broken if either walk found a break), the incremental one's freshness, and both walks. */
export type AuditVerifyResult = (
  | { ok: true; entries: number; head: AuditHeadSummary }
  | (Omit<Broken, 'reason'> & { reason: AuditBreak | 'full-walk-record-invalid' })
  /** No incremental verdict yet: the walk has verified `entries` of `of` (through id lastId) and goes on at the next visit. */
  | { ok: null; entries: number; lastId: number; of: number }
) &
  VerifyFreshness & {
    incremental: { ok: boolean | null; entries: number; brokenAt?: number | null; reason?: string };
    fullWalk: FullWalkStatus;
  };

/** A full walk's outcome: its stored summary, or that it was stopped (shutdown) before the end. */
export type FullWalkOutcome = { runId: string; stopped: true } | (FullWalkSummary & { stopped?: false });

interface Run {
  runId: string;
  promise: Promise<FullWalkOutcome>;
  resolve: (o: FullWalkOutcome) => void;
  reject: (e: unknown) => void;
}

export interface VerifierLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface AuditVerifierDeps {
  store: Pick<Store, 'auditVerify'>;
  /** How long a visit waits for the incremental walk. */
  waitMs: number;
  /** Rows per statement of the incremental walk and of the full walk. */
  chunk?: number;
  fullChunk?: number;
  /** At most one checkpoint per this many ms from visits (walks also write one every 20,000 entries). */
  checkpointIntervalMs?: number;
  now?: () => number;
  log?: VerifierLog;
  /** Told of each finished full walk (tests await it; a metric could count it). */
  onFullWalk?: (s: FullWalkSummary) => void;
}

const RUNS_KEPT = 32;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export function auditVerifier(deps: AuditVerifierDeps) {
  const { store, waitMs } = deps;
  const now = deps.now ?? Date.now;
  const checkpointIntervalMs = deps.checkpointIntervalMs ?? 60_000;
  let stopping = false;

  // ---- incremental, on request ----
  let waiting = 0;
  let running: Promise<IncrementalVerification> | undefined;
  let last: { result: IncrementalVerification; at: number } | undefined;
  let progress: { entries: number; lastId: number; of: number; from: number } | undefined;
  /** The point this replica verified last: in memory, out of a database writer's reach. */
  let tip: ChainPoint | undefined;
  /** The newest checkpoint this replica (or the last full walk) saw: one deleted after is named. */
  let knownCheckpoint = 0;
  let lastCheckpointWrite = -Infinity;

  function startIncremental(): Promise<IncrementalVerification> {
    if (running) return running;
    const write = now() - lastCheckpointWrite >= checkpointIntervalMs;
    running = store.auditVerify
      .incremental({
        write,
        chunk: deps.chunk,
        tip,
        expectCheckpoint: knownCheckpoint || undefined,
        shouldContinue: () => waiting > 0 && !stopping,
        onProgress: (p) => {
          progress = { ...p, from: progress?.from ?? 0 };
        },
      })
      .then((r) => {
        if (write) lastCheckpointWrite = now();
        knownCheckpoint = Math.max(knownCheckpoint, r.newestCheckpoint);
        if (r.tip && r.ok !== false) tip = r.tip;
        if (r.complete) last = { result: r, at: now() };
        else progress = { entries: r.entries, lastId: r.lastId, of: r.of, from: r.from };
        return r;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  /** Waits for an incremental walk at most `ms` (a failed walk fails the wait: a fault is a 503). */
  async function waitFor(ms: number): Promise<IncrementalVerification | undefined> {
    waiting++;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([startIncremental(), new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
    } finally {
      clearTimeout(timer);
      waiting--;
    }
  }

  // ---- full walks, in the background ----
  const runs = new Map<string, Run>();
  let current: { run: Run; startedAt: number; entries: number; of: number } | undefined;
  let queued: Run | undefined;
  let lastFull: FullWalkSummary | undefined;
  let timer: NodeJS.Timeout | undefined;

  function newRun(): Run {
    let resolve!: (o: FullWalkOutcome) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<FullWalkOutcome>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {}); // Reported through the log; a caller that awaits it sees the error.
    const run: Run = { runId: randomUUID(), promise, resolve, reject };
    runs.set(run.runId, run);
    while (runs.size > RUNS_KEPT) runs.delete(runs.keys().next().value!);
    return run;
  }

  const summary = (runId: string, startedAt: number, finishedAt: number, r: Extract<FullVerification, { complete: true }>): FullWalkSummary => ({
    runId,
    startedAt: new Date(startedAt).toISOString(),
    finishedAt: new Date(finishedAt).toISOString(),
    ageSeconds: 0,
    ok: r.ok,
    entries: r.entries,
    read: r.read,
    checkpoints: r.checkpoints,
    brokenAt: r.ok ? null : r.brokenAt,
    reason: r.ok ? null : r.reason,
    ...(!r.ok && r.anchored ? { anchored: r.anchored } : {}),
    ...(!r.ok && r.found ? { found: r.found } : {}),
  });

  async function execute(run: Run): Promise<void> {
    const startedAt = now();
    current = { run, startedAt, entries: 0, of: 0 };
    try {
      const r = await store.auditVerify.full({
        write: true,
        chunk: deps.fullChunk,
        shouldContinue: () => !stopping,
        pause: nextTurn,
        onProgress: (p) => {
          if (current) Object.assign(current, { entries: p.entries, of: p.of });
        },
      });
      if (!r.complete) {
        run.resolve({ runId: run.runId, stopped: true });
        return;
      }
      const s = summary(run.runId, startedAt, Math.max(now(), startedAt), r);
      lastFull = s;
      knownCheckpoint = Math.max(knownCheckpoint, r.newestCheckpoint);
      const record: Omit<FullVerifyRecord, 'keyId'> = {
        runId: run.runId,
        startedAt: new Date(s.startedAt),
        finishedAt: new Date(s.finishedAt),
        ok: s.ok,
        entries: s.entries,
        read: s.read,
        checkpoints: s.checkpoints,
        newestCheckpoint: r.newestCheckpoint,
        brokenAt: s.brokenAt,
        reason: s.reason as AuditBreak | null,
        detail: JSON.stringify({ ...(s.anchored ? { anchored: s.anchored } : {}), ...(s.found ? { found: s.found } : {}) }),
      };
      await store.auditVerify.saveFullRecord(record);
      const ms = Math.round(now() - startedAt);
      if (s.ok) deps.log?.info({ event: 'audit-full-verify', ok: true, entries: s.entries, read: s.read, checkpoints: s.checkpoints, ms }, `audit chain: full walk ok (${s.read} entries, ${s.checkpoints} checkpoints, ${ms} ms)`);
      else deps.log?.warn({ event: 'audit-full-verify', ok: false, brokenAt: s.brokenAt, reason: s.reason, ms }, `audit chain BROKEN: the full walk found ${s.reason} at entry ${s.brokenAt ?? '(the head)'}`);
      run.resolve(s);
      deps.onFullWalk?.(s);
    } catch (err) {
      deps.log?.warn({ event: 'audit-full-verify', err: (err as Error).message }, `audit chain: the full walk failed (${(err as Error).message}); retrying at the next interval`);
      run.reject(err);
    } finally {
      current = undefined;
      const next = queued;
      queued = undefined;
      if (next && !stopping) void execute(next);
      else if (next) next.resolve({ runId: next.runId, stopped: true });
    }
  }

  /** Starts a full walk now, or after the running one (a walk that started before the request may not see what it is about). */
  function requestFull(): { runId: string } {
    if (queued) return { runId: queued.runId };
    const run = newRun();
    if (stopping) run.resolve({ runId: run.runId, stopped: true });
    else if (current) queued = run;
    else void execute(run);
    return { runId: run.runId };
  }

  async function fullStatus(): Promise<FullWalkStatus> {
    const stored = await store.auditVerify.fullRecord();
    let latest = lastFull;
    let recordInvalid = false;
    if (stored && !stored.holds) recordInvalid = true;
    else if (stored) {
      const r = stored.record;
      knownCheckpoint = Math.max(knownCheckpoint, r.newestCheckpoint);
      // The newer of this replica's own and the stored one: an older stored verdict put back cannot replace a newer one seen here.
      if (!latest || r.finishedAt.getTime() > Date.parse(latest.finishedAt)) {
        const detail = JSON.parse(r.detail) as Pick<FullWalkSummary, 'anchored' | 'found'>;
        latest = {
          runId: r.runId,
          startedAt: r.startedAt.toISOString(),
          finishedAt: r.finishedAt.toISOString(),
          ageSeconds: 0,
          ok: r.ok,
          entries: r.entries,
          read: r.read,
          checkpoints: r.checkpoints,
          brokenAt: r.brokenAt,
          reason: r.reason,
          ...detail,
        };
      }
    }
    return {
      last: latest ? { ...latest, ageSeconds: Math.max(0, Math.round((now() - Date.parse(latest.finishedAt)) / 1000)) } : null,
      ...(recordInvalid ? { recordInvalid: true as const } : {}),
      running: current ? { runId: current.run.runId, startedAt: new Date(current.startedAt).toISOString(), entries: current.entries, of: current.of } : null,
    };
  }

  function answer(inProgress: boolean, full: FullWalkStatus): AuditVerifyResult {
    let base: AuditVerifyResult;
    const fresh = (at: number, from: number): VerifyFreshness => ({
      checkedAt: new Date(at).toISOString(),
      ageSeconds: Math.max(0, Math.round((now() - at) / 1000)),
      inProgress,
      verifiedFrom: from,
    });
    const extra = { fullWalk: full };
    const r = last?.result;
    if (last && r && r.ok !== null) {
      const incremental = r.ok ? { ok: true, entries: r.entries } : { ok: false, entries: r.entries, brokenAt: r.brokenAt, reason: r.reason };
      if (r.ok) base = { ok: true, entries: r.entries, head: headSummary(r.head), ...fresh(last.at, r.from), incremental, ...extra };
      else {
        const { complete: _c, from: _f, read: _r, tip: _t, newestCheckpoint: _n, ...broken } = r;
        base = { ...broken, ...fresh(last.at, r.from), incremental, ...extra };
      }
    } else {
      const p = progress ?? { entries: 0, lastId: 0, of: 0, from: 0 };
      base = { ok: null, entries: p.entries, lastId: p.lastId, of: p.of, ...fresh(now(), p.from), incremental: { ok: null, entries: p.entries }, ...extra };
    }
    const { checkedAt, ageSeconds, verifiedFrom, incremental } = base;
    const keep = { checkedAt, ageSeconds, inProgress, verifiedFrom, incremental, fullWalk: full };
    if (full.recordInvalid) return { ok: false, entries: base.entries, brokenAt: null, reason: 'full-walk-record-invalid', ...keep };
    const f = full.last;
    if (f && !f.ok) {
      return {
        ok: false,
        // A trail started over after it was deleted: the walk may predate entries the
        // incremental check has verified since; count those. Any other break: the walk's count.
        entries: f.reason === 'trail-missing' ? Math.max(f.entries, base.entries) : f.entries,
        brokenAt: f.brokenAt,
        reason: f.reason as AuditBreak,
        ...(f.anchored ? { anchored: f.anchored } : {}),
        ...(f.found ? { found: f.found } : {}),
        ...keep,
      };
    }
    return base;
  }

  return {
    /** The route: a bounded incremental step beside the latest full walk's verdict. */
    async verify(): Promise<AuditVerifyResult> {
      const full = await fullStatus(); // First: it may name a newer checkpoint than this replica knew.
      const r = await waitFor(waitMs);
      return answer(r === undefined || !r.complete ? running !== undefined : false, { ...full, running: full.running });
    },
    /** A full walk of every entry and checkpoint, in the background: its run id (the walk queued after a running one). */
    requestFull,
    /** The outcome of run `runId` (undefined: not a run of this replica, or long forgotten). */
    finished(runId: string): Promise<FullWalkOutcome> | undefined {
      return runs.get(runId)?.promise;
    },
    /** A walk at start-up, then one every `intervalMs` (0: none). */
    startBackground(intervalMs: number): void {
      if (intervalMs <= 0 || stopping) return;
      const tick = () => {
        requestFull();
        timer = setTimeout(tick, intervalMs).unref();
      };
      timer = setTimeout(tick, 0).unref();
    },
    /** Stops the timers; a walk in progress stops at its next chunk. */
    async close(): Promise<void> {
      stopping = true;
      clearTimeout(timer);
      const pending = [current?.run.promise, running].filter((p) => p !== undefined);
      await Promise.allSettled(pending);
    },
  };
}
export type AuditVerifier = ReturnType<typeof auditVerifier>;
