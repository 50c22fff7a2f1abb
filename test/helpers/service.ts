// Starts the real service in-process on an ephemeral port, against the real
// PostgreSQL + Redis or the embedded default, and seeds the seed's homelab project
// through the domain functions (fast; the admin API's own tests drive it over HTTP).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, type RunningService } from '../../server/app.js';
import { parseConfig } from '../../server/config.js';
import { SYSTEM } from '../../server/domain/access.js';
import type { Logger } from '../../server/services.js';
import { freshDatabase, REDIS_URL } from './db.js';
import { seedEmbeddedDataDir } from './embedded.js';

export type Backend = 'postgres+redis' | 'embedded';
export const BACKENDS: Backend[] = ['postgres+redis', 'embedded'];

interface TapLike {
  teardown(fn: () => unknown): void;
}

export const quietLog: Logger = { info() {}, warn() {}, error: (m) => console.error(m) };

export interface TestService extends RunningService {
  url: string;
  env: Record<string, string>;
}

export function testKeys() {
  return { ENCRYPTION_KEY: randomBytes(16).toString('hex'), AUTH_SECRET: randomBytes(32).toString('base64') };
}

export async function testEnv(t: TapLike, backend: Backend, extra: Record<string, string> = {}): Promise<Record<string, string>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-test-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    NODE_ENV: 'test',
    ...testKeys(),
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    CRYPTO_THREADS: '1',
    DB_WAIT_SECONDS: '10',
  };
  if (backend === 'postgres+redis') {
    env.DATABASE_URL = await freshDatabase(t);
    env.REDIS_URL = REDIS_URL;
  } else if (!extra.DATABASE_URL) {
    // The embedded database starts from a copy of the initdb template (helpers/embedded.ts).
    await seedEmbeddedDataDir(dataDir);
  }
  return { ...env, ...extra };
}

export async function startTestService(t: TapLike, env: Record<string, string>): Promise<TestService> {
  const service = await startService(parseConfig(env), quietLog);
  t.teardown(() => service.close());
  return { ...service, url: `http://127.0.0.1:${service.port}`, env };
}

/** The seed's inventory (project homelab, environment prod, path /), with test values. */
export const INVENTORY: Record<string, string> = {
  IDP_SECRET_KEY: 'a'.repeat(64),
  IDP_BOOTSTRAP_PASSWORD: 'correct horse battery staple !%&',
  IDP_BOOTSTRAP_TOKEN: 'b'.repeat(64),
  IDP_POSTGRES_PASSWORD: 'c'.repeat(24),
  DASHBOARD_ADMIN_PASSWORD: 'd'.repeat(24),
  DASHBOARD_OAUTH_CLIENT_SECRET: 'oauth-client-secret-issued-elsewhere',
  GATEWAY_TOKEN: 'e'.repeat(64),
  ROUTER_API_KEY: 'router-key-1234',
  LLM_API_KEY: 'sk-llm-5678',
  GIT_HOST_TOKEN: 'ghp_exampletoken',
  CHAT_BOT_TOKEN: '123456:ABCDEF',
  CHAT_WEBHOOK_DEUTSCH: 'https://chat.example/hooks/de',
  CHAT_WEBHOOK_ENGLISH: 'https://chat.example/hooks/en',
  CHAT_WEBHOOK_ALERTS: 'https://chat.example/hooks/alerts?a=1&b=2',
};

export interface Seeded {
  projectId: string;
  identityId: string;
  clientId: string;
  clientSecret: string;
}

/** homelab with the 14 inventory secrets under prod `/`, and homelab-eso as member. */
export async function seedHomelab(svc: RunningService['services'], opts: { role?: 'admin' | 'member' | 'viewer' | 'no-access' | null } = {}): Promise<Seeded> {
  const project = await svc.projects.create(SYSTEM, { name: 'homelab' });
  for (const [key, value] of Object.entries(INVENTORY)) {
    await svc.secrets.create(SYSTEM, { project: { id: project.id }, environment: 'prod', secretPath: '/', key, value });
  }
  const identity = await svc.identities.create(SYSTEM, { name: 'homelab-eso' });
  const ua = await svc.identities.attachUniversalAuth(SYSTEM, identity.id);
  const { clientSecret } = await svc.identities.createClientSecret(SYSTEM, identity.id);
  const role = opts.role === undefined ? 'member' : opts.role;
  if (role) await svc.memberships.upsertIdentity(SYSTEM, { project: { id: project.id }, identityId: identity.id, role });
  return { projectId: project.id, identityId: identity.id, clientId: ua.clientId, clientSecret };
}

export async function login(url: string, s: { clientId: string; clientSecret: string }): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: s.clientId, clientSecret: s.clientSecret }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}
