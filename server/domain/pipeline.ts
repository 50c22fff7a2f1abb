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

/** Where a change came from; recorded in its audit entries. */
export interface Origin {
  ip?: string | null;
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
}

export interface PipelineDeps {
  store: Pick<Store, 'transaction'>;
  bus: Pick<CacheBus, 'publish'>;
  access: Pick<AccessControl, 'authorize'>;
  onCommitted?: (c: CommittedChange) => void;
}

export class UnauditedChangeError extends Error {
  override readonly name = 'UnauditedChangeError';
  constructor() {
    super('a change invalidated caches without writing an audit entry; rolled back');
  }
}

export function writePipeline(deps: PipelineDeps) {
  const { store, bus, access, onCommitted } = deps;

  function grant(actor: AuditActor, origin: Origin): Grant {
    return {
      async run<T>(body: (c: Change) => Promise<T>): Promise<T> {
        const pending = new Map<string, [Topic, string]>();
        const events: string[] = [];
        const auditAppendSeconds: number[] = [];
        const publishSeconds: number[] = [];
        let who = actor;
        const result = await store.transaction(async (s) => {
          const change: Change = {
            s,
            async audit(entry) {
              await change.auditMany([entry]);
            },
            async auditMany(entries) {
              if (entries.length === 0) return;
              const started = performance.now();
              await s.audit.appendMany(
                s.tx,
                entries.map((entry) => ({ ...entry, ...who, ip: origin.ip ?? null })),
              );
              auditAppendSeconds.push((performance.now() - started) / 1000);
              for (const entry of entries) events.push(entry.eventType);
            },
            invalidate(topic, key) {
              pending.set(`${topic}\u0000${key}`, [topic, key]);
            },
            actAs(next) {
              who = next;
            },
          };
          const out = await body(change);
          if (pending.size > 0 && events.length === 0) throw new UnauditedChangeError();
          return out;
        });
        // After the commit, in the order queued: the change is durable before any replica
        // is told to drop what it cached (a replica reloading earlier would cache the old rows).
        for (const [topic, key] of pending.values()) {
          const started = performance.now();
          await bus.publish(topic, key);
          publishSeconds.push((performance.now() - started) / 1000);
        }
        onCommitted?.({ events, invalidations: pending.size, auditAppendSeconds, publishSeconds });
        return result;
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
  };
}
export type WritePipeline = ReturnType<typeof writePipeline>;
