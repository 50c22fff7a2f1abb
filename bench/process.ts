// The rows of issue 13 that need the service as a process of its own: its RSS (sampled
// inside the service process, never the load generator's) right after start and after
// the 10k scenario, and the 10k batch create itself, over HTTP.
//
// The service is `node dist/server/main.js` with `npm start`'s node flags (what it runs)
// and the sampler bench/soakSampler.js loaded by --import: on 'rss' it answers
// process.memoryUsage() as it is (no GC), on 'sample' after a full GC (--expose-gc).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { serviceEnv } from './env.js';

const MAIN = fileURLToPath(new URL('../server/main.js', import.meta.url));
const PACKAGE_JSON = fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? '../package.json' : '../../package.json', import.meta.url));
const SAMPLER = pathToFileURL(fileURLToPath(new URL('./soakSampler.js', import.meta.url))).href;

/** node's flags in `npm start` (`node <flags> dist/server/main.js`): the process rows run what it runs. */
export function npmStartNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(PACKAGE_JSON, 'utf8')) as { scripts: { start: string } }).scripts.start;
  const words = start.trim().split(/\s+/);
  if (words[0] !== 'node' || words[words.length - 1] !== 'dist/server/main.js') throw new Error(`npm start is not "node [flags] dist/server/main.js": ${start}`);
  return words.slice(1, -1);
}

export interface ServiceProcess {
  url: string;
  /** The first visit's one-time code (SETUP_TOKEN). */
  setupCode: string;
  pid: number;
  /** The service process's memoryUsage(), as it is (gc = false) or after a full GC. */
  memory(gc?: boolean): Promise<{ rss: number; heapUsed: number; external: number; arrayBuffers: number }>;
  close(): Promise<void>;
}

/** Env for the backend: an embedded database in a fresh folder, or a database URL made by the caller. */
export async function startServiceProcess(opts: { databaseUrl?: string; redisUrl?: string }): Promise<ServiceProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-bench-proc-'));
  const setupCode = randomBytes(16).toString('hex');
  const env: Record<string, string> = {
    ...serviceEnv(dataDir),
    SETUP_TOKEN: setupCode,
    PATH: process.env.PATH ?? '',
    // info: the 'listening' line carries the port.
    LOG_LEVEL: 'info',
    LOGIN_MAX_ATTEMPTS: '1000000000',
    // A chunk of 500 on a loaded machine can outlast the 5 s default: measured, not failed.
    REQUEST_DEADLINE_MS: '120000',
    ...(process.env.CRYPTO_THREADS ? { CRYPTO_THREADS: process.env.CRYPTO_THREADS } : {}),
  };
  if (opts.databaseUrl) env.DATABASE_URL = opts.databaseUrl;
  if (opts.redisUrl) env.REDIS_URL = opts.redisUrl;
  // BENCH_CPU_PROF=<dir>: V8 CPU profiles of the service's threads (main and crypto worker), written at its exit.
  const prof = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const child: ChildProcess = spawn(process.execPath, [...npmStartNodeFlags(), ...prof, '--expose-gc', '--import', SAMPLER, MAIN], {
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(m[1]!);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`service exited (${code}) before listening: ${err.slice(-1000)}`)));
  }).catch((e: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw e;
  });
  const pending: Array<(s: never) => void> = [];
  child.on('message', (m) => pending.shift()?.(m as never));
  return {
    url,
    setupCode,
    pid: child.pid!,
    memory: (gc = false) => new Promise((resolve) => (pending.push(resolve), child.send(gc ? 'sample' : 'rss'))),
    async close() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function call(url: string, path: string, init: { method?: string; token?: string; body?: unknown } = {}): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

export interface ProcessFigures {
  /** RSS 2 s after the service said it listens (no GC forced). */
  rssAfterStartMB: number;
  /** RSS after the 10k scenario (no GC forced). */
  rssAfter10kMB: number;
  /** Seconds to create 10,000 secrets through POST /api/v3/secrets/batch/raw, 20 chunks of 500, one after another. */
  batchCreate10kSeconds: number;
  batchChunkMs: { p50: number; max: number };
  /** Entries the audit trail gained during the create (each secret its own entry). */
  auditEntriesAdded: number;
}

const BULK_SECRETS = 10_000;
const CHUNK = 500;

/**
 * One service process: RSS right after start, then the README's set-up (first visit,
 * project), then the 10k batch create in a folder of its own, then RSS again.
 */
export async function processScenarios(svc: ServiceProcess): Promise<ProcessFigures> {
  await new Promise((r) => setTimeout(r, 2000));
  const rssAfterStartMB = (await svc.memory()).rss / 2 ** 20;

  const admin = (await call(svc.url, '/api/v1/admin/signup', {
    method: 'POST',
    body: { email: 'bench@example.test', password: 'a long bench passphrase', firstName: 'Bench', setupCode: svc.setupCode },
  })) as { token: string };
  const project = (await call(svc.url, '/api/v1/projects', { method: 'POST', token: admin.token, body: { projectName: 'bulk' } })) as {
    project: { id: string };
  };
  const headBefore = await auditEntries(svc.url, admin.token);

  const value = () => randomBytes(24).toString('base64url');
  const chunks: number[] = [];
  const started = performance.now();
  for (let c = 0; c < BULK_SECRETS / CHUNK; c++) {
    const secrets = Array.from({ length: CHUNK }, (_, i) => ({ secretKey: `BULK_${String(c * CHUNK + i).padStart(5, '0')}`, secretValue: value() }));
    const t0 = performance.now();
    await call(svc.url, '/api/v3/secrets/batch/raw', {
      method: 'POST',
      token: admin.token,
      body: { workspaceId: project.project.id, environment: 'prod', secretPath: '/', secrets },
    });
    chunks.push(performance.now() - t0);
  }
  const batchCreate10kSeconds = (performance.now() - started) / 1000;
  const headAfter = await auditEntries(svc.url, admin.token);
  const rssAfter10kMB = (await svc.memory()).rss / 2 ** 20;
  chunks.sort((a, b) => a - b);
  return {
    rssAfterStartMB,
    rssAfter10kMB,
    batchCreate10kSeconds,
    batchChunkMs: { p50: chunks[Math.floor(chunks.length / 2)]!, max: chunks[chunks.length - 1]! },
    auditEntriesAdded: headAfter - headBefore,
  };
}

/** The trail's entry count, as the superadmin's verify reports it (it recomputes the chain). */
async function auditEntries(url: string, token: string): Promise<number> {
  const r = (await call(url, '/api/v1/organization/audit-logs/verify', { token })) as { ok: boolean; entries: number };
  if (!r.ok) throw new Error(`audit chain does not verify: ${JSON.stringify(r)}`);
  return r.entries;
}
