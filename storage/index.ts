// The storage layer's single entry: every aggregate's store bound to the pool or to
// one transaction.
import type { Queryable, Sql, Tx } from './db.js';
import { auditStore, type AuditKey } from './audit.js';
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

function bind(sql: Queryable, opts: StoreOptions) {
  return {
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
    users: usersStore(sql, opts.privilegeKey),
    loginAttempts: loginAttemptsStore(sql, opts.beforeWrite),
  };
}

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
