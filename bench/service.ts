// Starts the real service in-process for the bench, on 127.0.0.1 and an ephemeral
// port, and seeds the seed's homelab project through the domain functions.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { serviceEnv } from './env.js';
import { startService, type RunningService } from '../server/app.js';
import { parseConfig } from '../server/config.js';
import { SYSTEM } from '../server/domain/access.js';
import type { Logger } from '../server/services.js';

export interface BenchService {
  url: string;
  port: number;
  backend: string;
  cryptoThreads: number;
  running: RunningService;
  /** What it was started with (a second replica starts from it). */
  env: Record<string, string>;
  close(): Promise<void>;
}

const line = (obj: unknown, msg?: string) => (typeof obj === 'string' ? obj : `${msg ?? ''} ${JSON.stringify(obj)}`);
const log: Logger = {
  info() {},
  warn: (obj, msg) => console.error(`[service warn] ${line(obj, msg)}`),
  error: (obj, msg) => console.error(`[service error] ${line(obj, msg)}`),
};

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable url>';
  }
}

/**
 * Config from the environment: the embedded database in a fresh temp folder by
 * default; BENCH_DATABASE_URL (an admin URL: a fresh `bench_<random>` database is
 * created on it and dropped after) and BENCH_REDIS_URL when set.
 */
export async function startBenchService(
  opts: {
    adminUrl?: string;
    redisUrl?: string;
    /** Settings on top of the bench's own (caps a scenario needs lifted). */
    extraEnv?: Record<string, string>;
    /** A second replica of this one: its database, Redis and keys; a data folder of its own. */
    replicaOf?: BenchService;
  } = { adminUrl: process.env.BENCH_DATABASE_URL, redisUrl: process.env.BENCH_REDIS_URL },
): Promise<BenchService> {
  const cleanups: Array<() => Promise<void> | void> = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) {
      try {
        await c();
      } catch (err) {
        console.error(`cleanup failed: ${(err as Error).message}`);
      }
    }
  };

  const dataDir = mkdtempSync(join(tmpdir(), 'vault-bench-'));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  const cryptoThreads = process.env.CRYPTO_THREADS ?? '1';
  const env: Record<string, string> = {
    ...serviceEnv(dataDir),
    CRYPTO_THREADS: cryptoThreads,
    DB_WAIT_SECONDS: '10',
    LOGIN_MAX_ATTEMPTS: '1000000000',
    LOG_LEVEL: 'warn',
    ...opts.extraEnv,
  };
  const backend: string[] = [];

  try {
    const adminUrl = opts.adminUrl?.trim();
    const primary = opts.replicaOf?.env;
    if (primary) {
      if (!primary.DATABASE_URL) throw new Error('a second replica needs PostgreSQL (the embedded database admits one process)');
      for (const k of ['DATABASE_URL', 'REDIS_URL', 'ENCRYPTION_KEY', 'AUTH_SECRET'] as const) if (primary[k]) env[k] = primary[k];
      backend.push(`replica on ${redact(env.DATABASE_URL!)}`);
    } else if (adminUrl) {
      const db = await freshDatabase(adminUrl);
      cleanups.push(db.drop);
      env.DATABASE_URL = db.url;
      backend.push(`postgres (${redact(env.DATABASE_URL)})`);
    } else {
      backend.push('embedded PGlite');
    }
    const redisUrl = primary ? undefined : opts.redisUrl?.trim();
    if (primary) {
      // Redis (if any) came with the primary's settings.
    } else if (redisUrl) {
      env.REDIS_URL = redisUrl;
      backend.push(`redis (${redact(redisUrl)})`);
    } else {
      backend.push('in-process cache');
    }

    const running = await startService(parseConfig(env), log);
    // Graceful: requests a scenario left in flight finish before the crypto pool closes
    // (closed under them, they would answer 503 and log errors after the figures).
    cleanups.push(() => running.shutdown(10_000).then(() => undefined));
    return {
      url: `http://127.0.0.1:${running.port}`,
      port: running.port,
      backend: backend.join(' + '),
      cryptoThreads: Number(cryptoThreads),
      running,
      env,
      close: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** A fresh `bench_<random>` database on the server of `adminUrl`; drop() removes it. */
export async function freshDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await a.end();
      }
    },
  };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const token = (length: number) => randomBytes(length).toString('base64url').slice(0, length);

/** The seed's 14 secrets, with values of realistic shapes and lengths. */
export function inventory(): Record<string, string> {
  return {
    IDP_SECRET_KEY: hex(32),
    IDP_BOOTSTRAP_PASSWORD: token(32),
    IDP_BOOTSTRAP_TOKEN: hex(32),
    IDP_POSTGRES_PASSWORD: hex(12),
    DASHBOARD_ADMIN_PASSWORD: hex(12),
    DASHBOARD_OAUTH_CLIENT_SECRET: token(40),
    GATEWAY_TOKEN: hex(32),
    ROUTER_API_KEY: `sk-router-${token(40)}`,
    LLM_API_KEY: `sk-proj-${token(48)}`,
    GIT_HOST_TOKEN: `ghp_${token(36)}`,
    CHAT_BOT_TOKEN: `${1000000000 + (randomBytes(4).readUInt32BE() % 999999999)}:${token(35)}`,
    CHAT_WEBHOOK_DEUTSCH: `https://chat.example.org/hooks/${token(24)}/${token(40)}`,
    CHAT_WEBHOOK_ENGLISH: `https://chat.example.org/hooks/${token(24)}/${token(40)}`,
    CHAT_WEBHOOK_ALERTS: `https://chat.example.org/hooks/${token(24)}/${token(40)}?thread=alerts&format=markdown`,
  };
}

export interface Seeded {
  projectId: string;
  clientId: string;
  clientSecret: string;
  secretCount: number;
}

/** homelab with the 14 secrets under prod `/`, and the identity homelab-eso as member. */
export async function seedHomelab(svc: RunningService['services']): Promise<Seeded> {
  const project = await svc.projects.create(SYSTEM, { name: 'homelab' });
  const secrets = inventory();
  for (const [key, value] of Object.entries(secrets)) {
    await svc.secrets.create(SYSTEM, { project: { id: project.id }, environment: 'prod', secretPath: '/', key, value });
  }
  const identity = await svc.identities.create(SYSTEM, { name: 'homelab-eso' });
  const ua = await svc.identities.attachUniversalAuth(SYSTEM, identity.id);
  const { clientSecret } = await svc.identities.createClientSecret(SYSTEM, identity.id);
  await svc.memberships.upsertIdentity(SYSTEM, { project: { id: project.id }, identityId: identity.id, role: 'member' });
  return { projectId: project.id, clientId: ua.clientId, clientSecret, secretCount: Object.keys(secrets).length };
}
