// The composition root: storage, crypto, caches and the domains, wired once at start.
import { createCrypto, type Crypto } from '../crypto/index.js';
import { memoryBus, redisBus, type CacheBus } from '../storage/cache.js';
import { connectDatabase, type Database } from '../storage/db.js';
import { classifyStorageError } from '../storage/errors.js';
import { CLOCK_SYNC_MS, dbClock, type DbClock } from '../storage/clock.js';
import { diskFullMessage, mib, type DiskLevel, type DiskState } from '../storage/diskGuard.js';
import { redisTransport } from '../storage/tls.js';
import { createStore, type Store } from '../storage/index.js';
import { sweepAccessTokens, sweepLoginFailures } from '../storage/identities.js';
import { pruneEvents } from '../storage/events.js';
import { pruneUserSessions } from '../storage/sessionPrune.js';
import { loadMigrations, migrate } from '../storage/migrate.js';
import { authenticator, type Authenticator } from './auth/authenticate.js';
import { sourceBudget } from './auth/loginSources.js';
import { deriveAuthKeys } from './auth/tokens.js';
import { rootKeySpec, setupCodeRequired, type Config } from './config.js';
import { accessControl, type AccessControl } from './domain/access.js';
import { auditDomain, auditHeadLog, openAuditKey, TRAIL_MISSING_WARNING, type AuditDomain } from './domain/audit.js';
import { auditVerifier, type AuditVerifier } from './domain/auditVerifier.js';
import { CACHE_SWEEP_MS, createCaches, topics, type Caches } from './domain/caches.js';
import { environmentsDomain, type EnvironmentsDomain } from './domain/environments.js';
import { eventHub, type EventHub } from './domain/eventHub.js';
import { exportDomain, type ExportDomain } from './domain/export.js';
import { foldersDomain, type FoldersDomain } from './domain/folders.js';
import { identitiesDomain, type IdentitiesDomain } from './domain/identities.js';
import { jwtAuthDomain, type JwtAuthDomain } from './domain/jwtAuth.js';
import { keySources } from './domain/jwtKeys.js';
import { instanceRecord } from './domain/integrity.js';
import { openKeyring, privilegeKeyOf, type Keyring } from './domain/keyring.js';
import { kubernetesAuthDomain, type KubernetesAuthDomain } from './domain/kubernetesAuth.js';
import { tokenAuthDomain, type TokenAuthDomain } from './domain/tokenAuth.js';
import { machineAuth, type MachineAuth } from './domain/machineAuth.js';
import { membershipsDomain, type MembershipsDomain } from './domain/memberships.js';
import { rolesDomain, type RolesDomain } from './domain/roles.js';
import { writePipeline, type CommittedChange, type WritePipeline } from './domain/pipeline.js';
import type { Logger } from './log.js';
import { projectsDomain, type ProjectsDomain } from './domain/projects.js';
import { secretVersionsDomain, type SecretVersionsDomain } from './domain/secretVersions.js';
import { secretImportsDomain, type SecretImportsDomain } from './domain/secretImports.js';
import { renderedListPrefix, secretsDomain, type SecretsDomain } from './domain/secrets.js';
import { tagsDomain, type TagsDomain } from './domain/tags.js';
import { folderSnapshots } from './domain/snapshots.js';
import { setupCode, usersDomain, type SetupCode, type UsersDomain } from './domain/users.js';
import { sendWebhook, webhooksDomain, type WebhooksDomain } from './domain/webhooks.js';
import { webhookWorker, type DeliveryOutcome, type WebhookWorker } from './domain/webhookWorker.js';

export interface Services {
  db: Database;
  /** The database's clock: everything time-bound is issued and checked by it (storage/clock.ts). */
  clock: DbClock;
  store: Store;
  crypto: Crypto;
  keyring: Keyring;
  bus: CacheBus;
  /** Change events to this replica's SSE subscribers (server/routes/v1/events.ts). */
  events: EventHub;
  /** SSE caps and timers (config.events). */
  eventStreams: Config['events'];
  caches: Caches;
  access: AccessControl;
  /** The write pipeline every change goes through. */
  changes: WritePipeline;
  machineAuth: MachineAuth;
  secrets: SecretsDomain;
  secretImports: SecretImportsDomain;
  tags: TagsDomain;
  secretVersions: SecretVersionsDomain;
  exports: ExportDomain;
  projects: ProjectsDomain;
  environments: EnvironmentsDomain;
  folders: FoldersDomain;
  identities: IdentitiesDomain;
  /** JWT and OIDC auth of machine identities. */
  jwtAuth: JwtAuthDomain;
  /** Kubernetes Auth (TokenReview) and Token Auth of machine identities. */
  kubernetesAuth: KubernetesAuthDomain;
  tokenAuth: TokenAuthDomain;
  memberships: MembershipsDomain;
  roles: RolesDomain;
  /** Infisical's webhooks, and this replica's delivery worker (server/domain/webhookWorker.ts). */
  webhooks: WebhooksDomain;
  webhookWorker: WebhookWorker;
  audit: AuditDomain;
  /** Incremental verification on request, full walks in the background (domain/auditVerifier.ts). */
  auditVerifier: AuditVerifier;
  users: UsersDomain;
  auth: Authenticator;
  config: Pick<Config, 'sessionTtlSeconds' | 'cookieSecure'>;
  /** Set at the start of a graceful shutdown: readiness fails from then on. */
  lifecycle: { shuttingDown: boolean };
  /** What the readiness probe reports: each dependency `ok`, `not configured`, or why it is not. */
  readiness(): Promise<Readiness>;
  close(): Promise<void>;
}

export interface Readiness {
  /**
   * Whether this replica should take traffic: false only for what is its own (shutting
   * down, its crypto pool gone, its schema behind its code, its embedded database). An
   * outage every replica shares (PostgreSQL, Redis) is reported in `checks` and in
   * `dependencies`, never a reason to leave the Service: requests then get the documented
   * 503 with Retry-After (or, without Redis, succeed), not "connection refused".
   */
  ready: boolean;
  /** Whether every dependency answers (the database, Redis when configured). */
  dependencies: boolean;
  /** `auditTrail` is reported, not a condition of readiness: a broken trail is evidence, the service keeps serving. */
  checks: Record<'database' | 'migrations' | 'redis' | 'crypto' | 'shutdown' | 'disk' | 'auditTrail', string>;
}

/** Checks whose failure is an outage every replica shares (readiness reports them without failing). */
export const SHARED_CHECKS: ReadonlySet<string> = new Set(['database', 'redis']);

/** How long the readiness probe waits for the database to answer `select`. */
export const READINESS_DB_TIMEOUT_MS = 1_000;
/** How often old change events are pruned (EVENTS_MAX_AGE_HOURS, EVENTS_MAX_PER_PROJECT). */
export const EVENTS_PRUNE_MS = 60_000;

/** Readiness's `disk` check when it is not `ok`: how much is free, against which threshold. */
function diskCheck(d: DiskState, guard: { reserveBytes: number; warnBytes: number }): string {
  return d.level === 'full'
    ? `full: ${mib(d.freeBytes)} free, below the ${mib(guard.reserveBytes)} reserve (DISK_RESERVE_BYTES); writes refused until space is freed`
    : `low: ${mib(d.freeBytes)} free, below ${mib(guard.warnBytes)} (DISK_WARN_BYTES); writes are refused below ${mib(guard.reserveBytes)}`;
}

/** One line per change of the disk's level: a warning before it is full, an error when writes stop, and when they resume. */
function logDisk(log: Logger, dir: string, reserveBytes: number, state: DiskState, previous: DiskLevel | undefined): void {
  const fields = { event: 'disk', dataDir: dir, disk: state.level, freeBytes: state.freeBytes, totalBytes: state.totalBytes };
  if (state.level === 'full') log.error(fields, `${diskFullMessage(dir, state.freeBytes, reserveBytes)}: writes are refused (503) until space is freed, reads go on`);
  else if (state.level === 'low') log.warn(fields, `disk low: ${mib(state.freeBytes)} free on the disk holding ${dir}; writes will be refused below DISK_RESERVE_BYTES`);
  else if (previous !== undefined) log.info(fields, `disk has room again: ${mib(state.freeBytes)} free on the disk holding ${dir}; writes are taken`);
}

export const CRYPTO_WORKER_LOST = 'a crypto worker stopped; exiting so the service restarts with its keys';

export type { Logger } from './log.js';

/** What the service reports to metrics as it runs (never a value, a name or a key). */
export interface ServiceHooks {
  cryptoTask?(op: string, seconds: number): void;
  coalescedRead?(): void;
  committed?(c: CommittedChange): void;
  /** A webhook delivery ended (server/domain/webhookWorker.ts); never a URL or a key. */
  webhookDelivery?(o: DeliveryOutcome): void;
  /** Each database call (a storage function): backend, aggregate, seconds, and how it failed (storage/errors.ts's class, or `other`). */
  dbCall?(backend: Database['kind'], store: string, seconds: number, failure?: string): void;
  /** The audit chain's state as last found: at start (a trail known broken) and after each full verification. */
  auditChain?(ok: boolean, verifiedAt?: Date): void;
}

/**
 * Access-token rows leave the table 10 minutes after they are revoked or expire (a retried
 * revoke, as ESO sends, is still answered 200 meanwhile), used-up ones and sessions at the
 * next sweep (every minute): the tables hold the live ones plus 10 minutes of churn
 * (issue 31 point 4). The audit trail keeps who logged in and who revoked what.
 */
const ACCESS_TOKEN_GRACE_SECONDS = 600;
const ACCESS_TOKEN_SWEEP_MS = 60_000;
/** How often the end of temporary memberships is written into the audit trail (the end itself is enforced at use). */
const MEMBERSHIP_EXPIRY_SWEEP_MS = 60_000;
/** A host whose wall clock is this far from the database's is named in the log (nothing depends on it: see storage/clock.ts). */
const CLOCK_SKEW_WARN_MS = 5_000;
const clockSkewMessage = (ms: number) =>
  `clock: this host's clock is ${Math.round(Math.abs(ms) / 1000)} s ${ms > 0 ? 'ahead of' : 'behind'} the database's; tokens, sessions and lockouts follow the database's clock`;

/** Runs `task` now and every `ms` after it finished; stop() waits for a run in progress. */
function periodically(ms: number, task: () => Promise<void>, onError: (err: unknown) => void) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = task()
      .catch(onError)
      .finally(() => {
        if (!stopped) timer = setTimeout(run, ms).unref();
      });
  };
  run();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

/** The PIN's bytes are zeroed and its references dropped, from the config and the environment. */
function dropPin(config: Config): void {
  if (config.pkcs11?.pin) {
    config.pkcs11.pin.fill(0);
    delete (config.pkcs11 as Partial<Config['pkcs11'] & object>).pin;
  }
  delete process.env.PKCS11_PIN;
}

function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? 'unknown error';
}

/**
 * Production mode on an instance without its superadmin: the first visit needs a setup
 * code, SETUP_TOKEN's or, unset, the one derived from AUTH_SECRET (the same on every
 * replica and across restarts; `vault-standalone setup-code` prints it). The log says
 * where it comes from, never the code. SETUP_TOKEN leaves the configuration and
 * process.env either way.
 */
async function firstVisitCode(config: Config, derived: string, store: Store, log: Logger): Promise<SetupCode | undefined> {
  const required = setupCodeRequired(config);
  const fromEnv = config.setupToken;
  delete (config as Partial<Config>).setupToken;
  delete process.env.SETUP_TOKEN;
  if (!required || (await store.users.count()) > 0) return undefined;
  if (fromEnv !== undefined) {
    log.info('first visit: registering the superadmin needs the setup code from SETUP_TOKEN');
    return setupCode(fromEnv);
  }
  log.warn(
    'first visit: registering the superadmin needs the setup code derived from AUTH_SECRET; ' +
      'print it with `vault-standalone setup-code` in the service\'s environment ' +
      '(Kubernetes: kubectl exec deploy/<name> -- node dist/server/cli/main.js setup-code)',
  );
  return setupCode(derived);
}

/** The audit domain, its full verifications reported to the metrics (ok or broken, and when). */
function observedAudit(audit: AuditDomain, hooks: ServiceHooks): AuditDomain {
  const report = hooks.auditChain;
  if (report === undefined) return audit;
  return {
    ...audit,
    async verify(actor) {
      const r = await audit.verify(actor);
      // null: nothing verified yet (no walk has finished); the gauges stay absent then.
      if (r.ok !== null) report(r.ok, new Date());
      return r;
    },
  };
}

export interface ServiceOptions extends ServiceHooks {
  /** The first visit's setup code (false for the CLI: only the service serves signups). */
  firstVisit?: boolean;
}

export async function createServices(config: Config, log: Logger, opts: ServiceOptions = {}): Promise<Services> {
  const hooks: ServiceHooks = opts;
  const cleanups: Array<() => Promise<void>> = [];
  const close = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => {});
  };
  try {
    const db = await connectDatabase({
      databaseUrl: config.databaseUrl,
      caFile: config.databaseCaFile,
      dataDir: config.dataDir,
      waitMs: config.dbWaitMs,
      deadlineMs: config.requestDeadlineMs,
      log: (m) => log.warn({ event: 'database-wait' }, m),
      disk: { reserveBytes: config.diskReserveBytes, warnBytes: config.diskWarnBytes, onChange: (state, previous) => logDisk(log, config.dataDir, config.diskReserveBytes, state, previous) },
    });
    cleanups.push(() => db.close());
    // The one clock of everything time-bound (tokens, sessions, lockouts, temporary
    // grants): the database's, read before anything is issued (storage/clock.ts).
    const clock = dbClock(db.sql);
    await clock.sync();
    if (Math.abs(clock.hostSkewMs) > CLOCK_SKEW_WARN_MS) log.warn({ event: 'clock-skew', hostSkewMs: Math.round(clock.hostSkewMs) }, clockSkewMessage(clock.hostSkewMs));
    const clockSync = periodically(CLOCK_SYNC_MS, async () => {
      const before = clock.hostSkewMs;
      await clock.sync();
      if (Math.abs(clock.hostSkewMs) > CLOCK_SKEW_WARN_MS && Math.abs(clock.hostSkewMs - before) > CLOCK_SKEW_WARN_MS) {
        log.warn({ event: 'clock-skew', hostSkewMs: Math.round(clock.hostSkewMs) }, clockSkewMessage(clock.hostSkewMs));
      }
    }, (err) => log.warn({ event: 'clock-sync', err: describe(err) }, `clock: reading the database's time failed (${describe(err)}); the last reading stands`));
    cleanups.push(clockSync.stop);
    const expectedMigration = (await loadMigrations()).length;
    const applied = await migrate(db.sql);
    if (applied.length) log.info({ event: 'migrations', applied }, `applied database migrations ${applied.join(', ')}`);
    else log.info({ event: 'migrations', applied }, 'database schema up to date');
    // Keyless until the audit key is open: it only reads keys and creates them.
    // Every write asks the embedded database's disk guard first (a full disk: 503, never a PGlite PANIC).
    const beforeWrite = db.disk ? () => db.disk!.admit() : undefined;
    const boot = createStore(db.sql, { beforeWrite });

    // Data keys say which root key version wrapped them (a rotation bumps it).
    const versions = await boot.keys.rootKeyVersions();
    if (versions.length > 1) throw new Error(`data keys are wrapped under several root key versions (${versions.join(', ')})`);
    const crypto = await createCrypto({
      rootKeys: [rootKeySpec(config, versions[0] ?? 1)],
      threads: config.cryptoThreads,
      renderCacheMaxBytes: config.renderCacheMaxBytes,
      // A lost worker cannot be re-keyed in this process; a restart loads the keys again.
      onFatal: () => {
        log.error({ event: 'crypto-worker-lost' }, CRYPTO_WORKER_LOST);
        process.exit(1);
      },
      onTask: hooks.cryptoTask,
    });
    cleanups.push(() => crypto.close());
    // The workers hold the key now (or are logged in to the token). Drop the main
    // thread's references to the key string (it cannot be zeroed; unreachable, it is
    // collected) and zero the PIN's bytes.
    delete (config as Partial<Config>).encryptionKey;
    delete process.env.ENCRYPTION_KEY;
    dropPin(config);
    const keyring = await openKeyring(boot, crypto);
    log.info(
      { event: 'keys', rootKeyVersion: crypto.rootKeyVersion, cryptoThreads: crypto.poolStats().threads },
      `root key version ${crypto.rootKeyVersion} loaded into ${crypto.poolStats().threads} crypto worker(s); canary opened`,
    );
    // Once, on an instance written by an older version: privilege rows MACed, the legacy
    // part of the audit trail recorded, both under the canary (server/domain/integrity.ts).
    const record = await instanceRecord(boot, crypto, keyring, ({ record: r, privilegeRows }) =>
      log.info(
        { event: 'instance-upgraded', privilegeRows, legacyAuditEntries: r.legacy.entries },
        `instance upgraded: ${privilegeRows} privilege row(s) MACed, ${r.legacy.entries} audit entries recorded as written before the chain was keyed`,
      ),
    );
    const dbCall = hooks.dbCall;
    const store = createStore(db.sql, {
      auditKey: await openAuditKey(boot, crypto, record),
      privilegeKey: privilegeKeyOf(crypto),
      beforeWrite,
      observe:
        dbCall === undefined
          ? undefined
          : (name, seconds, err) => dbCall(db.kind, name, seconds, err === undefined ? undefined : (classifyStorageError(err) ?? 'other')),
    });
    // Said at every start: the evidence stays in the anchor, the service keeps serving.
    const auditTrail = (await store.audit.anchor())?.trailMissing ? 'BROKEN: the chain was started over a trail that was deleted or rewritten (see the log)' : 'ok';
    if (auditTrail !== 'ok') {
      log.error({ event: 'audit-trail-missing' }, TRAIL_MISSING_WARNING);
      hooks.auditChain?.(false);
    }
    const heads = auditHeadLog({
      store,
      log: (line, head) => log.info({ event: 'audit-head', entries: head.entries, lastId: head.lastId, mac: head.mac }, line),
      every: config.auditHeadLogEvery,
    });
    // The last head before the database closes, for the log store.
    cleanups.push(() => heads.emit());

    const sweep = periodically(ACCESS_TOKEN_SWEEP_MS, async () => {
      await beforeWrite?.();
      const deleted = await sweepAccessTokens(db.sql, { graceSeconds: ACCESS_TOKEN_GRACE_SECONDS });
      if (deleted > 0) log.info({ event: 'access-token-sweep', deleted }, `access tokens: deleted ${deleted} revoked, expired or used up`);
      await sweepLoginFailures(db.sql, { olderThanSeconds: Math.max(ACCESS_TOKEN_GRACE_SECONDS, config.loginLockoutSeconds) });
      const sessions = await pruneUserSessions(db.sql);
      if (sessions > 0) log.info({ event: 'session-prune', deleted: sessions }, `sessions: deleted ${sessions} revoked or expired`);
    }, (err) => log.warn({ event: 'access-token-sweep', err: describe(err) }, `access tokens: sweep failed (${describe(err)}); retrying later`));
    cleanups.push(sweep.stop);

    const namespace = config.redisUrl ? (await store.organizations.ensureDefault()).id : undefined;
    // Start-up waits for Redis as it does for the database (the chart starts both beside the service).
    const bus = config.redisUrl
      ? await redisBus(config.redisUrl, {
          namespace,
          waitMs: config.dbWaitMs,
          transport: redisTransport(config.redisUrl, { caFile: config.redisCaFile, password: config.redisPassword }),
          log: (m) => log.warn({ event: 'redis' }, m),
        })
      : memoryBus();
    cleanups.push(() => bus.close());
    // AUTH_SECRET's bytes are zeroed once its per-purpose keys exist; the field goes too.
    const authKeys = deriveAuthKeys(config.authSecret, clock.now);
    delete (config as Partial<Config>).authSecret;
    const caches = createCaches(bus, config.cacheMaxBytes);
    // Rendered lists in the crypto workers' caches: keys are never reused, so this only
    // frees memory at once (the workers drop the oldest first anyway).
    bus.subscribe((topic, key) => {
      if (topic === topics.environment) crypto.forgetRendered(renderedListPrefix(key));
    });
    bus.onReset(() => crypto.forgetRendered(''));
    const access = accessControl({ store, caches, now: clock.now });
    const events = eventHub({ events: store.events, bus, pollMs: config.events.pollMs, log: (f, m) => log.warn(f, m) });
    cleanups.push(async () => events.close());
    const prune = periodically(EVENTS_PRUNE_MS, async () => {
      await beforeWrite?.();
      const deleted = await pruneEvents(db.sql, { maxAgeSeconds: config.events.maxAgeHours * 3600, maxPerProject: config.events.maxPerProject });
      if (deleted > 0) log.info({ event: 'events-prune', deleted }, `change events: pruned ${deleted}`);
    }, (err) => log.warn({ event: 'events-prune', err: describe(err) }, `change events: prune failed (${describe(err)}); retrying later`));
    cleanups.push(prune.stop);

    // A visit of the verify route waits at most this long for the incremental walk; the
    // full walk runs in the background (at start-up, every AUDIT_FULL_VERIFY_INTERVAL_SECONDS).
    const verifier = auditVerifier({ store, waitMs: Math.min(2000, Math.floor(config.requestDeadlineMs / 2)), log });
    verifier.startBackground(config.auditFullVerifyIntervalMs);
    cleanups.push(verifier.close);
    const changes = writePipeline({
      store,
      bus,
      access,
      onCommitted: (c) => {
        // The audit trail has the details (what, where); the log says that it happened, who
        // did it and in which request. A change that appended no entry (a refused login's
        // failure count) has nothing to say here.
        if (c.events.length > 0) {
          log.info(
            { event: 'audit', auditEvents: c.events, invalidations: c.invalidations, reqId: c.reqId ?? null, actorKind: c.actor.actorType, actorId: c.actor.actorId },
            `change committed: ${c.events.join(', ')}`,
          );
        }
        heads.committed(c.events.length);
        hooks.committed?.(c);
      },
    });
    const snapshots = folderSnapshots({ store, caches });
    const lockout = { maxAttempts: config.loginMaxAttempts, seconds: config.loginLockoutSeconds };
    const firstVisit = opts.firstVisit === false ? undefined : await firstVisitCode(config, authKeys.setupCode, store, log);
    const loginBudget = sourceBudget({ max: config.loginSourceMaxAttempts, windowSeconds: config.loginSourceWindowSeconds, now: clock.now });
    const users = await usersDomain({
      store,
      crypto,
      sessions: authKeys.sessions,
      emailKey: authKeys.loginAttempts,
      bus,
      changes,
      sessionTtlSeconds: config.sessionTtlSeconds,
      lockout,
      now: clock.now,
      cacheMaxBytes: config.cacheMaxBytes,
      budget: loginBudget,
      setupCode: firstVisit,
    });
    const machine = machineAuth({ store, keyring, tokens: authKeys.identity, caches, changes, lockout, now: clock.now });
    // Expired entries leave the caches (and the verified-token map) on a timer, not only
    // when their key is asked for again: memory follows what was used recently.
    const sweeper = setInterval(() => {
      caches.sweep();
      machine.sweep();
      users.sweep();
      loginBudget.sweep();
    }, CACHE_SWEEP_MS);
    sweeper.unref();
    cleanups.push(async () => clearInterval(sweeper));
    const lifecycle = { shuttingDown: false };
    async function readiness(): Promise<Readiness> {
      const checks: Readiness['checks'] = { database: 'ok', migrations: 'ok', redis: 'not configured', crypto: 'ok', shutdown: 'ok', disk: 'not configured', auditTrail };
      // The embedded database's disk is this replica's own: full (writes refused) is not ready; low is reported.
      let diskFull = false;
      if (db.disk) {
        try {
          const d = await db.disk.refresh();
          diskFull = d.level === 'full';
          checks.disk = d.level === 'ok' ? 'ok' : diskCheck(d, db.disk);
        } catch (err) {
          diskFull = true;
          checks.disk = `unknown (${describe(err)})`;
        }
      }
      let timer: NodeJS.Timeout | undefined;
      try {
        const rows = await Promise.race([
          db.sql<{ version: number }[]>`select coalesce(max(version), 0)::int as version from schema_migrations`,
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${READINESS_DB_TIMEOUT_MS} ms`)), READINESS_DB_TIMEOUT_MS);
          }),
        ]);
        const version = rows[0]?.version ?? 0;
        if (version < expectedMigration) checks.migrations = `at ${version}, expected ${expectedMigration}`;
      } catch (err) {
        checks.database = `unreachable (${describe(err)})`;
        checks.migrations = 'unknown';
      } finally {
        clearTimeout(timer);
      }
      if (bus.kind === 'redis') checks.redis = bus.live ? 'ok' : 'not subscribed (caches bypassed)';
      if (!crypto.alive) checks.crypto = 'worker pool stopped';
      if (lifecycle.shuttingDown) checks.shutdown = 'shutting down';
      const fine = (v: string) => v === 'ok' || v === 'not configured';
      // The embedded database is this replica's own: its failure is local.
      const shared = (k: string) => SHARED_CHECKS.has(k) && !(k === 'database' && db.kind === 'embedded');
      // Unknown only because the shared database does not answer: not this replica's fault.
      if (!fine(checks.database) && shared('database')) checks.migrations = 'not checked (database unreachable)';
      const local = (k: string) => !shared(k) && !(k === 'migrations' && checks.migrations.startsWith('not checked'));
      const ready = Object.entries(checks).every(([k, v]) => k === 'auditTrail' || !local(k) || (k === 'disk' ? !diskFull : fine(v)));
      const dependencies = fine(checks.database) && fine(checks.redis);
      return { ready, dependencies, checks };
    }
    const secretImports = secretImportsDomain({ store, access, changes, caches });
    const tags = tagsDomain({ store, access, changes, caches });
    const memberships = membershipsDomain({ store, access, changes });
    // A temporary grant ends at its time at every use (access.ts); this sweep writes its
    // end into the audit trail within a minute or so, once across replicas.
    const expirySweep = periodically(MEMBERSHIP_EXPIRY_SWEEP_MS, async () => {
      const recorded = await memberships.recordExpiries();
      if (recorded > 0) log.info({ event: 'membership-expiry-sweep', recorded }, `memberships: recorded the end of ${recorded} temporary grant(s) in the audit trail`);
    }, (err) => log.warn({ event: 'membership-expiry-sweep', err: describe(err) }, `memberships: expiry sweep failed (${describe(err)}); retrying later`));
    cleanups.push(expirySweep.stop);
    const policy = { allowPrivate: config.webhooks.allowPrivate, allowedOrigins: config.webhooks.allowedOrigins };
    // A test delivery runs inside its request: it ends well within the request deadline
    // (a hung receiver is a failed test, not a 503).
    const webhooks = webhooksDomain({ store, crypto, changes, policy, timeoutMs: Math.min(config.webhooks.timeoutMs, Math.floor(config.requestDeadlineMs / 2)) });
    const deliveries = webhookWorker({
      store,
      crypto,
      bus,
      webhooks,
      send: (url, body, headers) => sendWebhook(url, body, headers, { policy, timeoutMs: config.webhooks.timeoutMs }),
      retry: { periodMs: config.webhooks.retryPeriodMs, baseMs: config.webhooks.retryBaseMs, maxMs: config.webhooks.retryMaxMs },
      timeoutMs: config.webhooks.timeoutMs,
      pollMs: config.webhooks.pollMs,
      log: (f, m) => log.warn(f, m),
      onOutcome: (o) => hooks.webhookDelivery?.(o),
    });
    // Stopped before the database closes (cleanups run in reverse).
    cleanups.push(() => deliveries.close());
    return {
      lifecycle,
      readiness,
      db,
      clock,
      store,
      crypto,
      keyring,
      bus,
      events,
      eventStreams: config.events,
      caches,
      access,
      changes,
      machineAuth: machine,
      users,
      auth: authenticator({ machineAuth: machine, users }),
      config: { sessionTtlSeconds: config.sessionTtlSeconds, cookieSecure: config.cookieSecure },
      secrets: secretsDomain({ store, crypto, access, snapshots, changes, imports: secretImports, tags, onCoalescedRead: hooks.coalescedRead }),
      secretImports,
      tags,
      secretVersions: secretVersionsDomain({ store, crypto, access, changes }),
      exports: exportDomain({ crypto, access, snapshots, changes }),
      projects: projectsDomain({ store, crypto, access, changes }),
      environments: environmentsDomain({ changes }),
      folders: foldersDomain({ store, access, changes }),
      identities: identitiesDomain({ store, keyring, changes }),
      // A key-source fetch ends well within the request deadline (a hung JWKS server is a 503, not a timeout).
      jwtAuth: jwtAuthDomain({ store, changes, machineAuth: machine, keys: keySources({
        timeoutMs: Math.min(3000, Math.floor(config.requestDeadlineMs / 2)),
        jwksAllowedOrigins: config.oidcJwksAllowedOrigins,
        log: (fields, message) => log.warn(fields, message),
        now: clock.now,
      }), now: clock.now }),
      // A TokenReview ends well within the request deadline (a hung API server is a 503, not a timeout).
      kubernetesAuth: kubernetesAuthDomain({ store, crypto, changes, machineAuth: machine, reviewTimeoutMs: Math.min(3000, Math.floor(config.requestDeadlineMs / 2)), now: clock.now }),
      tokenAuth: tokenAuthDomain({ store, changes, machineAuth: machine, now: clock.now }),
      memberships,
      roles: rolesDomain({ store, access, changes }),
      webhooks,
      webhookWorker: deliveries,
      audit: observedAudit(auditDomain({ store, access, verifier }), hooks),
      auditVerifier: verifier,
      close,
    };
  } catch (err) {
    dropPin(config);
    await close();
    throw err;
  }
}
