// Configuration from the environment, validated with zod at start. A bad value stops
// the process with the seed's exact message; nothing is guessed in production.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { parseIpRangeList, type IpRange } from './http/clientAddress.js';
import { parseOriginList } from './domain/fetchGuard.js';
import type { RootKeySpec } from '../crypto/index.js';
import { checkTlsPair, TlsPairError, type TlsFiles } from './http/tls.js';
import { postgresTls, redisTransport, TransportConfigError } from '../storage/tls.js';

export const ENCRYPTION_KEY_MESSAGE = 'ENCRYPTION_KEY must be 32 hex characters';
export const AUTH_SECRET_MESSAGE = 'invalid AUTH_SECRET';

/** From most to least verbose; `silent` drops every log line (start-up failures still print). */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** base64 (standard or url-safe, padding optional) of at least 32 bytes. */
export function isValidAuthSecret(value: string): boolean {
  const s = value.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(s)) return false;
  return Buffer.from(s, 'base64').length >= 32;
}

/** Empty (as templates render an unset value) means unset, for every setting but the keys. */
const blankIsUnset = (v: unknown) => (typeof v === 'string' && v.trim() === '' ? undefined : v);

const optionalUrl = z.preprocess(blankIsUnset, z.string().trim().optional());

/** Decimal digits only: z.coerce would read '' as 0 and also take 0x1F90 or 8e3. */
/**
 * The smallest DISK_RESERVE_BYTES: one WAL segment (16 MiB) and 4 MiB for the writes in
 * flight. Below a segment's room, PGlite's WAL can meet the full disk (a PANIC that spins).
 */
export const MIN_DISK_RESERVE_BYTES = 20 * 1024 * 1024;

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d{1,15}$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const setting = <T extends z.ZodType>(schema: T) => z.preprocess(blankIsUnset, schema);

/** A list setting: its parser answers the items, or an error naming the bad entry, which refuses the start. */
const listSetting = <R, T>(parse: (v: string) => R | { error: string }, items: (r: R) => T[]) =>
  setting(
    z
      .string()
      .transform((v, ctx) => {
        const r = parse(v);
        if (typeof r === 'object' && r !== null && 'error' in r) {
          ctx.addIssue({ code: 'custom', message: (r as { error: string }).error });
          return z.NEVER;
        }
        return items(r as R);
      })
      .default([]),
  );

const encryptionKey = z.string({ error: ENCRYPTION_KEY_MESSAGE }).regex(/^[0-9a-fA-F]{32}$/, ENCRYPTION_KEY_MESSAGE);

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  KEY_PROVIDER: setting(z.enum(['local', 'pkcs11']).default('local')),
  // Required by KEY_PROVIDER=local (checked below, with the seed's message).
  ENCRYPTION_KEY: z.string().optional(),
  // PKCS11_*: read and checked by parseKeySettings (shared with rotate-key's NEW_ target).
  AUTH_SECRET: z.string({ error: AUTH_SECRET_MESSAGE }).refine(isValidAuthSecret, AUTH_SECRET_MESSAGE),
  PORT: setting(integer(0, 65535).default(8080)),
  HOST: setting(z.string().default('0.0.0.0')),
  DATABASE_URL: optionalUrl,
  REDIS_URL: optionalUrl,
  // Read and checked below (transportSettings).
  DATABASE_CA_FILE: optionalUrl,
  REDIS_CA_FILE: optionalUrl,
  DATA_DIR: setting(z.string().default('./data')),
  DB_WAIT_SECONDS: setting(integer(0).default(180)),
  CRYPTO_THREADS: setting(integer(1, 64).optional()),
  MAX_BODY_BYTES: setting(integer(1024).default(1024 * 1024)),
  LOGIN_MAX_ATTEMPTS: setting(integer(1).default(3)),
  LOGIN_LOCKOUT_SECONDS: setting(integer(1).default(300)),
  LOGIN_SOURCE_MAX_ATTEMPTS: setting(integer(1).default(20)),
  LOGIN_SOURCE_WINDOW_SECONDS: setting(integer(1).default(60)),
  SESSION_TTL_SECONDS: setting(integer(60).default(43200)),
  COOKIE_SECURE: setting(z.enum(['auto', 'always', 'never']).default('auto')),
  LOG_LEVEL: setting(z.enum(LOG_LEVELS).default('info')),
  AUDIT_HEAD_LOG_EVERY: setting(integer(1).default(1000)),
  AUDIT_FULL_VERIFY_INTERVAL_SECONDS: setting(integer(0).default(86400)),
  EVENTS_MAX_AGE_HOURS: setting(integer(1, 24 * 365).default(168)),
  EVENTS_MAX_PER_PROJECT: setting(integer(100, 10_000_000).default(10_000)),
  EVENTS_MAX_CONNECTIONS: setting(integer(1, 1_000_000).default(2000)),
  EVENTS_MAX_CONNECTIONS_PER_ACTOR: setting(integer(1, 10_000).default(20)),
  EVENTS_PING_MS: setting(integer(10, 600_000).default(15_000)),
  EVENTS_RECHECK_MS: setting(integer(10, 60_000).default(60_000)),
  EVENTS_POLL_MS: setting(integer(10, 600_000).default(2_000)),
  WEBHOOK_ALLOW_PRIVATE_RANGES: setting(z.enum(['true', 'false']).default('false')),
  WEBHOOK_RETRY_PERIOD_SECONDS: setting(integer(1, 30 * 24 * 3600).default(24 * 3600)),
  WEBHOOK_RETRY_BASE_MS: setting(integer(1, 3_600_000).default(5_000)),
  WEBHOOK_RETRY_MAX_MS: setting(integer(1, 24 * 3_600_000).default(900_000)),
  WEBHOOK_TIMEOUT_MS: setting(integer(100, 60_000).default(10_000)),
  WEBHOOK_POLL_MS: setting(integer(10, 600_000).default(1_000)),
  SETUP_TOKEN: setting(z.string().trim().min(16, 'must be at least 16 characters').max(256, 'must be at most 256 characters').optional()),
  LOG_FORMAT: setting(z.enum(['json', 'pretty']).default('json')),
  TLS_CERT_FILE: optionalUrl,
  TLS_KEY_FILE: optionalUrl,
  METRICS_PORT: setting(integer(0, 65535).optional()),
  METRICS_HOST: setting(z.string().default('127.0.0.1')),
  REQUEST_DEADLINE_MS: setting(integer(100, 600_000).default(5000)),
  SLOW_CLIENT_TIMEOUT_MS: setting(integer(100, 600_000).default(10_000)),
  MAX_UNSENT_BYTES: setting(integer(0).default(64 * 1024 * 1024)),
  CACHE_MAX_BYTES: setting(integer(1024 * 1024).default(64 * 1024 * 1024)),
  RENDER_CACHE_MAX_BYTES: setting(integer(0).default(32 * 1024 * 1024)),
  SHUTDOWN_GRACE_SECONDS: setting(integer(0, 3600).default(25)),
  WATCHDOG_SECONDS: setting(integer(0, 3600).default(60)),
  DISK_RESERVE_BYTES: setting(integer(MIN_DISK_RESERVE_BYTES).default(64 * 1024 * 1024)),
  DISK_WARN_BYTES: setting(integer(MIN_DISK_RESERVE_BYTES).default(256 * 1024 * 1024)),
  TRUSTED_PROXIES: listSetting(parseIpRangeList, (r) => r.ranges),
  WEBHOOK_ALLOWED_ORIGINS: listSetting(parseOriginList, (r) => r.origins),
  OIDC_JWKS_ALLOWED_ORIGINS: listSetting(parseOriginList, (r) => r.origins),
});

/** KEY_PROVIDER=pkcs11: where the root key is. The PIN is zeroed and deleted once the workers logged in. */
export interface Pkcs11Config {
  module: string;
  tokenLabel?: string;
  slot?: number;
  keyLabel: string;
  pin: Buffer;
}

export interface Config {
  nodeEnv: string;
  keyProvider: 'local' | 'pkcs11';
  /** KEY_PROVIDER=local. Deleted by createServices once the crypto workers hold the key. */
  encryptionKey?: string;
  /** KEY_PROVIDER=pkcs11. */
  pkcs11?: Pkcs11Config;
  /** Zeroed and deleted by createServices once the keys derived from it exist. */
  authSecret: Buffer;
  port: number;
  host: string;
  databaseUrl?: string;
  /** DATABASE_CA_FILE: the CA of the server's certificate (sslmode in DATABASE_URL: storage/tls.ts). */
  databaseCaFile?: string;
  redisUrl?: string;
  /** REDIS_CA_FILE: the CA of the server's certificate (rediss:// only). */
  redisCaFile?: string;
  /** REDIS_PASSWORD or REDIS_PASSWORD_FILE (never in the process's arguments). */
  redisPassword?: string;
  dataDir: string;
  dbWaitMs: number;
  cryptoThreads?: number;
  maxBodyBytes: number;
  loginMaxAttempts: number;
  loginLockoutSeconds: number;
  /** Password checks (argon2) one source may cause per window, on each replica (server/auth/loginSources.ts). */
  loginSourceMaxAttempts: number;
  loginSourceWindowSeconds: number;
  sessionTtlSeconds: number;
  /** auto: Secure when X-Forwarded-Proto says the client used TLS. */
  cookieSecure: 'auto' | 'always' | 'never';
  logLevel: LogLevel;
  /** The audit chain's head is logged every this many entries (and at shutdown). */
  auditHeadLogEvery: number;
  /** A background full walk of the audit chain at start-up and every this many ms (0: only when asked). */
  auditFullVerifyIntervalMs: number;
  /** Change events (issue 30): retention, SSE caps and timers. */
  events: {
    maxAgeHours: number;
    maxPerProject: number;
    maxConnections: number;
    maxConnectionsPerActor: number;
    pingMs: number;
    recheckMs: number;
    pollMs: number;
  };
  /** Webhook delivery (issue 30 point 4): target rules, retries, timers. */
  webhooks: {
    /** Loopback and private ranges allowed as webhook targets (WEBHOOK_ALLOW_PRIVATE_RANGES). */
    allowPrivate: boolean;
    /** Origins allowed to be loopback or private (WEBHOOK_ALLOWED_ORIGINS). */
    allowedOrigins: string[];
    retryPeriodMs: number;
    retryBaseMs: number;
    retryMaxMs: number;
    timeoutMs: number;
    pollMs: number;
  };
  /**
   * The first visit's setup code, when the operator chose it (the chart generates one).
   * Deleted by createServices once it holds the code's hash.
   */
  setupToken?: string;
  /** `json`: one JSON object per line (pino); `pretty`: one readable line, for a terminal. */
  logFormat: 'json' | 'pretty';
  /** HTTPS on PORT with this PEM certificate (chain) and key, reloaded when the files change; unset: plain HTTP. */
  tls?: TlsFiles;
  /** Prometheus /metrics on its own listener; unset: no metrics listener. */
  metricsPort?: number;
  metricsHost: string;
  /** A request not answered within this many ms gets a 503 (the work may still finish). */
  requestDeadlineMs: number;
  /** A large reply whose client reads nothing for this many ms has its connection closed. */
  slowClientTimeoutMs: number;
  /** Cap on reply bytes held for slow clients, all connections together; over it: 503. */
  maxUnsentBytes: number;
  /** The main thread's read-through caches together (estimated bytes; shares in server/domain/caches.ts). */
  cacheMaxBytes: number;
  /** Each crypto worker's cache of rendered answers (plaintext bytes). */
  renderCacheMaxBytes: number;
  /** On SIGTERM, how long in-flight requests may take to finish before connections are dropped. */
  shutdownGraceSeconds: number;
  /** A main thread whose event loop does not turn for this long is killed by the watchdog (server/watchdog.ts); 0: off. */
  watchdogSeconds: number;
  /** Embedded database: writes are refused while DATA_DIR's disk has less free (storage/diskGuard.ts). */
  diskReserveBytes: number;
  /** Embedded database: below this much free, a warning is logged (and readiness reports it). */
  diskWarnBytes: number;
  /**
   * Proxies whose X-Forwarded-For is believed (server/http/clientAddress.ts). Empty (the
   * default): the header is ignored and the socket's address is the client's.
   */
  trustedProxies: IpRange[];
  /** Origins an OIDC discovery document's jwks_uri may name besides the document's own. */
  oidcJwksAllowedOrigins: string[];
}

/**
 * Production mode (NODE_ENV=production, as the image sets it) or an explicit SETUP_TOKEN:
 * the first visit needs a one-time setup code. `npm start` with no configuration keeps
 * the open first visit.
 */
export const setupCodeRequired = (c: Pick<Config, 'nodeEnv' | 'setupToken'>): boolean =>
  c.nodeEnv === 'production' || c.setupToken !== undefined;

export class ConfigError extends Error {}

/** Throws ConfigError with the first message a person must act on. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // The seed's key message first, as before KEY_PROVIDER existed.
  if ((blankIsUnset(env.KEY_PROVIDER) ?? 'local') === 'local' && !encryptionKey.safeParse(env.ENCRYPTION_KEY).success) {
    throw new ConfigError(ENCRYPTION_KEY_MESSAGE);
  }
  const result = schema.safeParse(env);
  if (!result.success) {
    // The bootstrap keys first: their messages are the ones the seed documents.
    const issues = result.error.issues;
    const first =
      issues.find((i) => i.path[0] === 'ENCRYPTION_KEY') ?? issues.find((i) => i.path[0] === 'AUTH_SECRET') ?? issues[0]!;
    const field = String(first.path[0]);
    throw new ConfigError(
      field === 'ENCRYPTION_KEY' || field === 'AUTH_SECRET' ? first.message : `invalid ${field}: ${first.message}`,
    );
  }
  const e = result.data;
  if (e.DISK_WARN_BYTES < e.DISK_RESERVE_BYTES) {
    throw new ConfigError(`invalid DISK_WARN_BYTES: ${e.DISK_WARN_BYTES} is below DISK_RESERVE_BYTES (${e.DISK_RESERVE_BYTES}); the warning must come before writes are refused`);
  }
  const transport = transportSettings(env, e);
  return {
    nodeEnv: e.NODE_ENV,
    ...parseKeySettings(env),
    authSecret: Buffer.from(e.AUTH_SECRET.trim(), 'base64'),
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    ...transport,
    dataDir: resolve(e.DATA_DIR),
    dbWaitMs: e.DB_WAIT_SECONDS * 1000,
    cryptoThreads: e.CRYPTO_THREADS,
    maxBodyBytes: e.MAX_BODY_BYTES,
    loginMaxAttempts: e.LOGIN_MAX_ATTEMPTS,
    loginLockoutSeconds: e.LOGIN_LOCKOUT_SECONDS,
    loginSourceMaxAttempts: e.LOGIN_SOURCE_MAX_ATTEMPTS,
    loginSourceWindowSeconds: e.LOGIN_SOURCE_WINDOW_SECONDS,
    sessionTtlSeconds: e.SESSION_TTL_SECONDS,
    cookieSecure: e.COOKIE_SECURE,
    logLevel: e.LOG_LEVEL,
    auditHeadLogEvery: e.AUDIT_HEAD_LOG_EVERY,
    auditFullVerifyIntervalMs: e.AUDIT_FULL_VERIFY_INTERVAL_SECONDS * 1000,
    events: {
      maxAgeHours: e.EVENTS_MAX_AGE_HOURS,
      maxPerProject: e.EVENTS_MAX_PER_PROJECT,
      maxConnections: e.EVENTS_MAX_CONNECTIONS,
      maxConnectionsPerActor: e.EVENTS_MAX_CONNECTIONS_PER_ACTOR,
      pingMs: e.EVENTS_PING_MS,
      recheckMs: e.EVENTS_RECHECK_MS,
      pollMs: e.EVENTS_POLL_MS,
    },
    webhooks: {
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE_RANGES === 'true',
      allowedOrigins: e.WEBHOOK_ALLOWED_ORIGINS,
      retryPeriodMs: e.WEBHOOK_RETRY_PERIOD_SECONDS * 1000,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: Math.max(e.WEBHOOK_RETRY_MAX_MS, e.WEBHOOK_RETRY_BASE_MS),
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      pollMs: e.WEBHOOK_POLL_MS,
    },
    setupToken: e.SETUP_TOKEN,
    logFormat: e.LOG_FORMAT,
    tls: tlsSettings(e.TLS_CERT_FILE, e.TLS_KEY_FILE),
    metricsPort: e.METRICS_PORT,
    metricsHost: e.METRICS_HOST,
    requestDeadlineMs: e.REQUEST_DEADLINE_MS,
    slowClientTimeoutMs: e.SLOW_CLIENT_TIMEOUT_MS,
    maxUnsentBytes: e.MAX_UNSENT_BYTES,
    cacheMaxBytes: e.CACHE_MAX_BYTES,
    renderCacheMaxBytes: e.RENDER_CACHE_MAX_BYTES,
    shutdownGraceSeconds: e.SHUTDOWN_GRACE_SECONDS,
    watchdogSeconds: e.WATCHDOG_SECONDS,
    diskReserveBytes: e.DISK_RESERVE_BYTES,
    diskWarnBytes: e.DISK_WARN_BYTES,
    trustedProxies: e.TRUSTED_PROXIES,
    oidcJwksAllowedOrigins: e.OIDC_JWKS_ALLOWED_ORIGINS,
  };
}

/** TLS_CERT_FILE and TLS_KEY_FILE: both or neither, the pair checked now (one line on a bad one). */
function tlsSettings(certFile: string | undefined, keyFile: string | undefined): TlsFiles | undefined {
  if (certFile === undefined && keyFile === undefined) return undefined;
  if (certFile === undefined || keyFile === undefined) {
    throw new ConfigError(`${certFile === undefined ? 'TLS_KEY_FILE' : 'TLS_CERT_FILE'} is set but ${certFile === undefined ? 'TLS_CERT_FILE' : 'TLS_KEY_FILE'} is not: give both (or neither)`);
  }
  const files = { certFile: resolve(certFile), keyFile: resolve(keyFile) };
  try {
    checkTlsPair(files);
  } catch (err) {
    if (err instanceof TlsPairError) throw new ConfigError(err.message);
    throw err;
  }
  return files;
}

/**
 * The database's and Redis's TLS and the Redis password, checked as the connections will
 * apply them (storage/tls.ts), so a bad setting stops the start with one line naming it.
 */
function transportSettings(
  env: Record<string, string | undefined>,
  e: { DATABASE_URL?: string; REDIS_URL?: string; DATABASE_CA_FILE?: string; REDIS_CA_FILE?: string },
): Pick<Config, 'databaseCaFile' | 'redisCaFile' | 'redisPassword'> {
  const password = blankIsUnset(env.REDIS_PASSWORD) as string | undefined;
  const passwordFile = blankIsUnset(env.REDIS_PASSWORD_FILE) as string | undefined;
  if (password !== undefined && passwordFile !== undefined) throw new ConfigError('REDIS_PASSWORD and REDIS_PASSWORD_FILE are both set: give one');
  let redisPassword = password;
  if (passwordFile !== undefined) {
    try {
      // A trailing newline (as editors and `echo` leave one) is not part of the password.
      redisPassword = readFileSync(passwordFile, 'utf8').replace(/[\r\n]+$/, '');
    } catch (err) {
      throw new ConfigError(`REDIS_PASSWORD_FILE: cannot read ${passwordFile} (${(err as { code?: string }).code ?? 'error'})`);
    }
    if (redisPassword === '') throw new ConfigError(`REDIS_PASSWORD_FILE: ${passwordFile} is empty`);
  }
  if (e.DATABASE_URL === undefined && e.DATABASE_CA_FILE !== undefined) {
    throw new ConfigError('DATABASE_CA_FILE is set but DATABASE_URL is not (the embedded database has no network link)');
  }
  if (e.REDIS_URL === undefined && (e.REDIS_CA_FILE !== undefined || redisPassword !== undefined)) {
    throw new ConfigError(`${e.REDIS_CA_FILE !== undefined ? 'REDIS_CA_FILE' : passwordFile !== undefined ? 'REDIS_PASSWORD_FILE' : 'REDIS_PASSWORD'} is set but REDIS_URL is not`);
  }
  try {
    if (e.DATABASE_URL !== undefined) postgresTls(e.DATABASE_URL, e.DATABASE_CA_FILE);
    if (e.REDIS_URL !== undefined) redisTransport(e.REDIS_URL, { caFile: e.REDIS_CA_FILE, password: redisPassword });
  } catch (err) {
    if (err instanceof TransportConfigError) throw new ConfigError(err.message);
    throw err;
  }
  return { databaseCaFile: e.DATABASE_CA_FILE, redisCaFile: e.REDIS_CA_FILE, redisPassword };
}

export type KeySettings = Pick<Config, 'keyProvider' | 'encryptionKey' | 'pkcs11'>;

/**
 * The root key settings under `prefix` ('' for the service; 'NEW_' for rotate-key's
 * target, where each unset NEW_PKCS11_* group falls back to its PKCS11_* value).
 * Every refusal is a ConfigError naming the setting.
 */
export function parseKeySettings(env: Record<string, string | undefined>, prefix = ''): KeySettings {
  const own = (name: string) => blankIsUnset(env[prefix + name]) as string | undefined;
  const provider = own('KEY_PROVIDER') ?? 'local';
  if (provider !== 'local' && provider !== 'pkcs11') {
    throw new ConfigError(`invalid ${prefix}KEY_PROVIDER: must be 'local' or 'pkcs11'`);
  }
  if (provider === 'local') {
    const k = encryptionKey.safeParse(env[`${prefix}ENCRYPTION_KEY`]);
    if (!k.success) throw new ConfigError(prefix === '' ? ENCRYPTION_KEY_MESSAGE : `${prefix}ENCRYPTION_KEY must be 32 hex characters`);
    return { keyProvider: 'local', encryptionKey: k.data.toLowerCase() };
  }
  // A group of settings (token: label or slot; PIN: value or file) comes whole from
  // the prefixed names when any of them is set, else from the unprefixed ones.
  const group = (names: string[]) => {
    const usePrefix = prefix === '' || names.some((n) => own(n) !== undefined);
    const p = usePrefix ? prefix : '';
    return Object.fromEntries(names.map((n) => [n, { name: p + n, value: blankIsUnset(env[p + n]) as string | undefined }]));
  };
  const { PKCS11_MODULE: mod } = group(['PKCS11_MODULE']);
  const { PKCS11_TOKEN_LABEL: label, PKCS11_SLOT: slot } = group(['PKCS11_TOKEN_LABEL', 'PKCS11_SLOT']);
  const { PKCS11_PIN: pinValue, PKCS11_PIN_FILE: pinFile } = group(['PKCS11_PIN', 'PKCS11_PIN_FILE']);
  const { PKCS11_KEY_LABEL: keyLabel } = group(['PKCS11_KEY_LABEL']);
  const need = `is required when ${prefix}KEY_PROVIDER=pkcs11`;
  if (mod!.value === undefined) throw new ConfigError(`${prefix}PKCS11_MODULE ${need} (the path of the token's PKCS#11 library)`);
  if ((label!.value === undefined) === (slot!.value === undefined)) {
    throw new ConfigError(`${prefix}PKCS11_TOKEN_LABEL or ${prefix}PKCS11_SLOT (exactly one) ${need}`);
  }
  let slotNumber: number | undefined;
  if (slot!.value !== undefined) {
    const n = integer(0, 0xffffffff).safeParse(slot!.value);
    if (!n.success) throw new ConfigError(`invalid ${slot!.name}: must be a whole number`);
    slotNumber = n.data;
  }
  if ((pinValue!.value === undefined) === (pinFile!.value === undefined)) {
    throw new ConfigError(`${prefix}PKCS11_PIN or ${prefix}PKCS11_PIN_FILE (exactly one) ${need}`);
  }
  const keyLabelValue = keyLabel!.value?.trim() ?? DEFAULT_PKCS11_KEY_LABEL;
  let pin: Buffer;
  if (pinFile!.value !== undefined) {
    let raw: Buffer;
    try {
      raw = readFileSync(pinFile!.value);
    } catch (err) {
      throw new ConfigError(`${pinFile!.name}: cannot read ${pinFile!.value} (${(err as { code?: string }).code ?? 'error'})`);
    }
    // A trailing newline (as editors and `echo` leave one) is not part of the PIN.
    let end = raw.length;
    while (end > 0 && (raw[end - 1] === 0x0a || raw[end - 1] === 0x0d)) end--;
    pin = Buffer.alloc(end);
    raw.copy(pin, 0, 0, end);
    raw.fill(0);
  } else {
    pin = Buffer.from(pinValue!.value!, 'utf8');
  }
  if (pin.length === 0) throw new ConfigError(`${(pinFile!.value !== undefined ? pinFile : pinValue)!.name}: the PIN is empty`);
  return {
    keyProvider: 'pkcs11',
    pkcs11: {
      module: mod!.value,
      ...(label!.value !== undefined ? { tokenLabel: label!.value } : { slot: slotNumber! }),
      keyLabel: keyLabelValue,
      pin,
    },
  };
}

export const DEFAULT_PKCS11_KEY_LABEL = 'vault-standalone-root';

/**
 * The root key this configuration names, as createCrypto takes it, at `version` (the
 * database's current root key version). A PKCS#11 PIN is copied: createCrypto zeroes
 * its copy; the caller drops config.pkcs11.pin (see createServices).
 */
export function rootKeySpec(config: Pick<Config, 'keyProvider' | 'encryptionKey' | 'pkcs11'>, version: number, settingPrefix = ''): RootKeySpec {
  if (config.keyProvider === 'pkcs11') {
    const p = config.pkcs11;
    if (!p) throw new ConfigError('KEY_PROVIDER=pkcs11 without its settings');
    const pin = new Uint8Array(p.pin.length);
    pin.set(p.pin);
    return {
      provider: 'pkcs11',
      version,
      module: p.module,
      keyLabel: p.keyLabel,
      settingPrefix,
      ...(p.tokenLabel !== undefined ? { tokenLabel: p.tokenLabel } : { slot: p.slot! }),
      pin,
    };
  }
  if (config.encryptionKey === undefined) throw new ConfigError(ENCRYPTION_KEY_MESSAGE);
  return { provider: 'local', version, keyHex: config.encryptionKey };
}

/** The settings that carry a secret, dropped from the environment once the workers hold it. */
export const SECRET_SETTINGS = ['ENCRYPTION_KEY', 'AUTH_SECRET', 'PKCS11_PIN', 'REDIS_PASSWORD'] as const;

export const DEV_KEYS_FILE = 'dev-keys.env';

/**
 * Outside production, a fresh clone with no configuration gets development keys,
 * generated once into the data folder (mode 0600) and reused on every start after.
 * Returns the environment to parse, and the file path when keys came from it.
 */
export function withDevelopmentKeys(env: Record<string, string | undefined>): {
  env: Record<string, string | undefined>;
  generated?: string;
  loaded?: string;
} {
  if ((env.NODE_ENV ?? 'development') === 'production') return { env };
  if (env.ENCRYPTION_KEY !== undefined && env.AUTH_SECRET !== undefined) return { env };
  const dir = resolve(env.DATA_DIR ?? './data');
  const file = join(dir, DEV_KEYS_FILE);
  let generated: string | undefined;
  if (!existsSync(file)) {
    // New keys never go beside a database (a restored DATA_DIR, one whose key file was
    // lost): they could not open it, and would be read again at every later start.
    const dbDir = join(dir, 'pglite');
    if (!env.DATABASE_URL?.trim() && existsSync(dbDir) && readdirSync(dbDir).length > 0) {
      const missing = ['ENCRYPTION_KEY', 'AUTH_SECRET'].filter((k) => env[k] === undefined).join(' and ');
      throw new Error(
        `${dir} holds a database but no ${DEV_KEYS_FILE}, and ${missing} ${missing.includes(' and ') ? 'are' : 'is'} not set: ` +
          `refusing to generate keys that cannot open it. Put back the ${DEV_KEYS_FILE} kept with this database (or its backup), ` +
          'or set ENCRYPTION_KEY and AUTH_SECRET; for a new instance use an empty DATA_DIR',
      );
    }
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const body =
      '# Development keys generated by vault-standalone on first start.\n' +
      '# BACK THIS FILE UP: without ENCRYPTION_KEY the stored secrets cannot be read.\n' +
      `ENCRYPTION_KEY=${randomBytes(16).toString('hex')}\n` +
      `AUTH_SECRET=${randomBytes(32).toString('base64')}\n`;
    // 'wx': never overwrite keys that exist.
    writeFileSync(file, body, { mode: 0o600, flag: 'wx' });
    generated = file;
  }
  const fromFile: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) fromFile[m[1]!] = m[2]!;
  }
  return {
    env: {
      ...env,
      ENCRYPTION_KEY: env.ENCRYPTION_KEY ?? fromFile.ENCRYPTION_KEY,
      AUTH_SECRET: env.AUTH_SECRET ?? fromFile.AUTH_SECRET,
    },
    generated,
    loaded: generated ? undefined : file,
  };
}
