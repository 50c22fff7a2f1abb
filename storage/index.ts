// The storage layer's single entry: every aggregate's store bound to the pool or to
// one transaction.
import type { Queryable, Sql, Tx } from './db.js';
import { auditStore, type AuditKey } from './audit.js';
import { auditVerifyStore } from './auditCheckpoints.js';
import { eventsStore } from './events.js';
import { foldersStore } from './folders.js';
import { identitiesStore } from './identities.js';
import { jwtAuthStore } from './jwtAuth.js';
import { kubernetesAuthStore } from './kubernetesAuth.js';
import { tokenAuthStore } from './tokenAuth.js';
import { keysStore } from './keys.js';
import { loginAttemptsStore } from './loginAttempts.js';
import { membershipsStore } from './memberships.js';
import { organizationsStore } from './organizations.js';
import type { PrivilegeKey } from './privilege.js';
import { projectRolesStore } from './projectRoles.js';
import { projectsStore } from './projects.js';
import { secretImportsStore } from './secretImports.js';
import { secretTagsStore } from './secretTags.js';
import { secretsStore } from './secrets.js';
import { usersStore } from './users.js';
import { webhooksStore } from './webhooks.js';

function bind(sql: Queryable, opts: StoreOptions) {
  const stores = {
    keys: keysStore(sql),
    organizations: organizationsStore(sql),
    projects: projectsStore(sql),
    folders: foldersStore(sql),
    events: eventsStore(sql),
    secrets: secretsStore(sql),
    secretImports: secretImportsStore(sql),
    secretTags: secretTagsStore(sql),
    identities: identitiesStore(sql),
    jwtAuths: jwtAuthStore(sql),
    kubernetesAuths: kubernetesAuthStore(sql),
    tokenAuths: tokenAuthStore(sql),
    memberships: membershipsStore(sql, opts.privilegeKey),
    projectRoles: projectRolesStore(sql, opts.privilegeKey),
    audit: auditStore(sql, opts.auditKey),
    auditVerify: auditVerifyStore(sql, opts.auditKey),
    users: usersStore(sql, opts.privilegeKey),
    loginAttempts: loginAttemptsStore(sql, opts.beforeWrite),
    webhooks: webhooksStore(sql),
  };
  const observe = opts.observe;
  if (observe !== undefined) for (const name in stores) timed(name, stores[name as keyof typeof stores] as unknown as Record<string, unknown>, observe);
  return stores;
}

/**
 * Times every call of one aggregate's store in place: a call returning a plain promise
 * (an async function: one or a few statements) reports its duration, and its error when
 * it rejects. Anything else (a lazy postgres.js query a caller may still turn into a
 * cursor) is returned untouched and not timed, so timing never runs a query twice.
 */
function timed(name: string, store: Record<string, unknown>, observe: QueryObserver): void {
  for (const key of Object.keys(store)) {
    const fn = store[key];
    if (typeof fn !== 'function') continue;
    store[key] = function (this: unknown, ...args: unknown[]): unknown {
      const started = performance.now();
      const r: unknown = (fn as (...a: unknown[]) => unknown).apply(this, args);
      if (r instanceof Promise && Object.getPrototypeOf(r) === Promise.prototype) {
        r.then(
          () => observe(name, (performance.now() - started) / 1000),
          (err: unknown) => observe(name, (performance.now() - started) / 1000, err),
        );
      }
      return r;
    };
  }
}

/** Told of every store call that returned a promise: its aggregate (`secrets`, `audit`, …), seconds, and its error if it failed. */
export type QueryObserver = (store: string, seconds: number, err?: unknown) => void;

export interface StoreOptions {
  /**
   * Called before every transaction begins and before the writes made outside one (login
   * attempts): throws to refuse the write before anything is sent to the database (the
   * embedded database's disk guard, storage/diskGuard.ts).
   */
  beforeWrite?: () => Promise<void>;
  /** The key the audit trail is chained with; without it, audit appends and verify refuse. */
  auditKey?: AuditKey;
  /**
   * MACs privilege rows (storage/privilege.ts); without it, writing a person, a membership
   * or a role and reading a member's role refuse, and no superadmin flag holds.
   */
  privilegeKey?: PrivilegeKey;
  /** Database call timings and failures, for the metrics (server/metrics.ts). */
  observe?: QueryObserver;
}

export type Stores = ReturnType<typeof bind>;
export type TxStores = Stores & { tx: Tx };

export interface Store extends Stores {
  sql: Sql;
  /** Runs fn in one transaction; everything it writes commits or rolls back together. */
  transaction<T>(fn: (s: TxStores) => Promise<T>): Promise<T>;
}

export function createStore(sql: Sql, opts: StoreOptions = {}): Store {
  return {
    sql,
    ...bind(sql, opts),
    transaction: async <T>(fn: (s: TxStores) => Promise<T>) => {
      await opts.beforeWrite?.();
      // Inside, writes need no second look: the transaction was admitted whole.
      const inner = { ...opts, beforeWrite: undefined };
      return (await sql.begin((tx) => fn({ ...bind(tx, inner), tx }))) as T;
    },
  };
}

export type { Sql, Tx, Queryable } from './db.js';
