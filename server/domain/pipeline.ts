// The write pipeline: the one way a change reaches storage.
//
//   authorize (actor, permission, resource)
//     → transaction → storage writes → audit entries (never values) → commit
//     → invalidations published to every replica, after the commit
//
// A domain function asks for a grant first (inProject / inOrganization / byCaller: the
// 404 / 403 checks happen there, before any transaction), validates its input, then
// calls grant.run(body). The body gets the stores bound to the transaction, `audit`
// (actor and address filled in from the grant) and `invalidate` (queued, published only
// once the transaction has committed). A change that invalidates caches without writing
// an audit entry is a bug and rolls back. Nothing else in server/ opens a transaction
// for a change (test/server/pipeline/guard.test.ts drives every state-changing route and
// checks each one's audit entry and its effect on a second replica).
import type { AuditEvent } from '../../storage/audit.js';
import type { CacheBus } from '../../storage/cache.js';
import type { Store, TxStores } from '../../storage/index.js';
import type { ProjectRecord } from '../../storage/projects.js';
import { auditActor, requireOrgAdmin, type AccessControl, type ProjectAccess, type Actor, type AuditActor, type Permission, type ProjectRef, type SystemActor } from './access.js';
import type { Topic } from './caches.js';
import { EVENTS_TOPIC, mayGiveEvents, writeEvents, type EventNotice } from './events.js';

/** Where a change came from; recorded in its audit entries. */
export interface Origin {
  ip?: string | null;
  /** The request's id (X-Request-Id), for the log line of the change; never recorded in the trail. */
  reqId?: string;
}

/** An audit entry as a change writes it: who and from where are the grant's. */
export type AuditEntry = Omit<AuditEvent, 'actorType' | 'actorId' | 'ip'>;

export interface Change {
  /** Every store, bound to this change's transaction. */
  readonly s: TxStores;
  /** Appends an entry to the audit trail inside this transaction (fails closed). */
  audit(entry: AuditEntry): Promise<void>;
  /** Appends several entries, in order, each its own entry, under one hold of the chain (fails closed). */
  auditMany(entries: readonly AuditEntry[]): Promise<void>;
  /** Queued; published to every replica once the change has committed. */
  invalidate(topic: Topic, key: string): void;
  /** Entries from here on name `actor` (a signup records the account it just created). */
  actAs(actor: AuditActor): void;
  /**
   * Says this change has sent every statement whose effect the next change with the same
   * key must see (it may still send others that touch nothing the key names, wait for
   * results, and fail). In a group that next change may then start: its statements run
   * after these on the group's connection, so it sees their effect. Elsewhere nothing happens.
   */
  sent(): void;
}

export interface Grant {
  run<T>(body: (c: Change) => Promise<T>): Promise<T>;
}

export interface ProjectGrant extends Grant {
  project: ProjectRecord;
  role: string;
  /** What the actor may do with the project's secrets (per environment and path). */
  access: ProjectAccess;
}

/** What the pipeline reports after each committed change (metrics; never a value). */
export interface CommittedChange {
  events: readonly string[];
  invalidations: number;
  /** Seconds each audit append took inside the transaction. */
  auditAppendSeconds: readonly number[];
  /** Seconds each invalidation took to be applied by every replica (publish() resolving). */
  publishSeconds: readonly number[];
  /** Who the entries name (the last actAs, or the grant's actor) and the request it came from, for the log. */
  actor: AuditActor;
  reqId?: string;
}

export interface PipelineDeps {
  store: Pick<Store, 'transaction'>;
  bus: Pick<CacheBus, 'publish'>;
  access: Pick<AccessControl, 'authorize'>;
  onCommitted?: (c: CommittedChange) => void;
  /** After the commit: the projects a change added events to (server/domain/events.ts), and their last ids (metrics). */
  onEvents?: (notices: readonly EventNotice[]) => void;
}

export class UnauditedChangeError extends Error {
  override readonly name = 'UnauditedChangeError';
  constructor() {
    super('a change invalidated caches without writing an audit entry; rolled back');
  }
}

/** What one change collected while its body ran. */
interface ChangeState {
  readonly actor: AuditActor;
  who: AuditActor;
  readonly origin: Origin;
  readonly pending: Map<string, [Topic, string]>;
  readonly events: string[];
  readonly auditAppendSeconds: number[];
  /** The entries that may give change events (written with the change: see events.ts). */
  readonly eventEntries: AuditEvent[];
  notices: EventNotice[];
}

function changeState(actor: AuditActor, origin: Origin): ChangeState {
  return { actor, who: actor, origin, pending: new Map(), events: [], auditAppendSeconds: [], eventEntries: [], notices: [] };
}

/**
 * The Change a body sees. `append` writes entries to the trail: at once inside the
 * change's own transaction, or (grouped) collected for the group's one append.
 */
function changeFor(s: TxStores, st: ChangeState, append: (events: AuditEvent[]) => Promise<void>, sent: () => void = () => {}): Change {
  const change: Change = {
    s,
    async audit(entry) {
      await change.auditMany([entry]);
    },
    async auditMany(entries) {
      if (entries.length === 0) return;
      const stamped = entries.map((entry) => ({ ...entry, ...st.who, ip: st.origin.ip ?? null }));
      await append(stamped);
      for (const entry of stamped) {
        st.events.push(entry.eventType);
        if (mayGiveEvents(entry)) st.eventEntries.push(entry);
      }
    },
    invalidate(topic, key) {
      st.pending.set(`${topic}\u0000${key}`, [topic, key]);
    },
    actAs(next) {
      st.who = next;
    },
    sent,
  };
  return change;
}

/** At most this many changes share one group transaction (bounds a group's time and its row locks). */
export const MAX_GROUP = 64;

interface Queued {
  st: ChangeState;
  /** See groupedByCaller. */
  key: string;
  body: (c: Change) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export function writePipeline(deps: PipelineDeps) {
  const { store, bus, access, onCommitted, onEvents } = deps;

  /** After the commit, in the order queued (see grant), then the change is reported. */
  async function published(st: ChangeState): Promise<void> {
    // Announced without waiting for the other replicas: an announcement carries no event,
    // and a replica that misses it catches up from the table (eventHub.ts).
    for (const n of st.notices) void bus.publish(EVENTS_TOPIC, `${n.projectId}:${n.lastId}`);
    if (st.notices.length > 0) onEvents?.(st.notices);
    const publishSeconds: number[] = [];
    for (const [topic, key] of st.pending.values()) {
      const started = performance.now();
      await bus.publish(topic, key);
      publishSeconds.push((performance.now() - started) / 1000);
    }
    onCommitted?.({
      events: st.events,
      invalidations: st.pending.size,
      auditAppendSeconds: st.auditAppendSeconds,
      publishSeconds,
      actor: st.who,
      reqId: st.origin.reqId,
    });
  }

  function checkAudited(st: ChangeState): void {
    if (st.pending.size > 0 && st.events.length === 0) throw new UnauditedChangeError();
  }

  function grant(actor: AuditActor, origin: Origin): Grant {
    return {
      async run<T>(body: (c: Change) => Promise<T>): Promise<T> {
        const st = changeState(actor, origin);
        const result = await store.transaction(async (s) => {
          const out = await body(
            changeFor(s, st, async (events) => {
              const started = performance.now();
              await s.audit.appendMany(s.tx, events);
              st.auditAppendSeconds.push((performance.now() - started) / 1000);
            }),
          );
          checkAudited(st);
          // Last, so the project's event counter is locked only for the commit.
          st.notices = await writeEvents(s, st.eventEntries);
          return out;
        });
        // After the commit: the change is durable before any replica is told to drop
        // what it cached (a replica reloading earlier would cache the old rows).
        await published(st);
        return result;
      },
    };
  }

  // Group commit: small, frequent changes (machine logins and token revocations, ESO's
  // every sync) queue while a group is in its transaction; the next group takes every
  // change queued (up to MAX_GROUP) into one transaction. The changes run (see
  // groupedByCaller for which at the same time), their entries are collected, and the group appends them all in one hold of the audit
  // chain, in order, each still its own entry: one anchor update and one commit for the
  // group instead of one per change. A change and its entries still commit together:
  // both are in the group's transaction. Entries are appended in the order the changes
  // came, whatever order their statements ran in.
  //
  // A change that throws (rare for these: an expected refusal is a value, not an error)
  // rolls the whole group back, and then every change of the group runs again alone, in
  // its own transaction, as an ungrouped change would: each gets its own answer, and no
  // change depends on another's failure. A group that fails to append or commit fails
  // every change in it; nothing of any of them is written.
  const queue: Queued[] = [];
  let draining = false;

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queue.length > 0) await runGroup(queue.splice(0, MAX_GROUP));
    } finally {
      draining = false;
    }
  }

  /** Thrown out of a group's transaction to roll it back when one of its changes failed. */
  class ChangeFailed extends Error {}

  async function runGroup(group: Queued[]): Promise<void> {
    const values: unknown[] = new Array(group.length);
    try {
      await store.transaction(async (s) => {
        const entries: AuditEvent[][] = group.map(() => []);
        // Changes with the same key run one after another, in queue order; the others
        // run at the same time, their statements sent together on the group's connection.
        // A key's next change starts when the one before it has sent its statements
        // (Change.sent) or has ended.
        const chains = new Map<string, Promise<void>>();
        let broken = false; // once a change has failed, the group rolls back: the rest need not run
        const runs = group.map((q, n) => {
          let release!: () => void;
          const released = new Promise<void>((resolve) => (release = resolve));
          const run = async () => {
            try {
              if (broken) return;
              values[n] = await q.body(changeFor(s, q.st, async (events) => void entries[n]!.push(...events), release));
              checkAudited(q.st);
            } catch (error) {
              broken = true;
              throw error;
            } finally {
              release();
            }
          };
          const after = chains.get(q.key);
          chains.set(q.key, released);
          return after === undefined ? run() : after.then(run);
        });
        // Every change is awaited (none is left running) before the group decides.
        const settled = await Promise.allSettled(runs);
        const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        // Alone, the error is the change's own answer; in a group, see runAlone.
        if (failed) throw group.length === 1 ? failed.reason : new ChangeFailed();
        for (const q of group) q.st.notices = await writeEvents(s, q.st.eventEntries);
        const started = performance.now();
        await s.audit.appendMany(s.tx, entries.flat());
        const seconds = (performance.now() - started) / 1000;
        for (const q of group) if (q.st.events.length > 0) q.st.auditAppendSeconds.push(seconds);
      });
    } catch (error) {
      if (error instanceof ChangeFailed) {
        for (const q of group) await runAlone(q);
      } else {
        for (const q of group) q.reject(error);
      }
      return;
    }
    // Committed. Each change's invalidations go out on their own (the next group does not wait).
    group.forEach((q, n) => published(q.st).then(() => q.resolve(values[n]), q.reject));
  }

  /** A change of a group that was rolled back, run again from scratch in a transaction of its own. */
  async function runAlone(q: Queued): Promise<void> {
    await grant(q.st.actor, q.st.origin).run(q.body).then(q.resolve, q.reject);
  }

  function grouped(actor: AuditActor, origin: Origin, key: string): Grant {
    return {
      run<T>(body: (c: Change) => Promise<T>): Promise<T> {
        return new Promise<T>((resolve, reject) => {
          queue.push({ st: changeState(actor, origin), key, body, resolve: resolve as (v: unknown) => void, reject });
          if (!draining) void drain();
        });
      },
    };
  }

  return {
    /** Resolves the project (404), demands `permission` in it (403), then grants the change. */
    async inProject(actor: Actor | SystemActor, ref: ProjectRef, permission: Permission, origin: Origin = {}): Promise<ProjectGrant> {
      const { project, role, access: scope } = await access.authorize(actor, ref, permission);
      return { project, role, access: scope, ...grant(auditActor(actor), origin) };
    },

    /** Organization-wide changes (identities, people): the superadmin and the service only. */
    inOrganization(actor: Actor | SystemActor, origin: Origin = {}): Grant {
      requireOrgAdmin(actor);
      return grant(auditActor(actor), origin);
    },

    /**
     * Changes whose permission is the caller's own proof (a password, a client secret, a
     * token it holds, the first visit): the domain checks that proof, the entry names who.
     */
    byCaller(actor: AuditActor, origin: Origin = {}): Grant {
      return grant(actor, origin);
    },

    /**
     * As byCaller, committed with other such changes in one transaction (see drain):
     * for small, frequent changes whose body is a few statements (logins, revocations).
     * In a group, changes with the same `key` run one after another in the order they
     * came, and changes with different keys at the same time: the key names what a
     * change locks or counts (a login: its identity's attempt counter), so two changes
     * that could see each other's writes never interleave. A body must not wait on
     * anything but its own statements: the group waits for it.
     */
    groupedByCaller(actor: AuditActor, origin: Origin, key: string): Grant {
      return grouped(actor, origin, key);
    },
  };
}
export type WritePipeline = ReturnType<typeof writePipeline>;
