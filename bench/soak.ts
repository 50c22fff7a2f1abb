// Soak: the service as a process (node --expose-gc) under ESO sync cycles (login → list →
// revoke, a new token each time) and cached reads with one long-lived token, for
// SOAK_SECONDS (default 600). Every SOAK_SAMPLE_SECONDS (default 30) the service runs a
// full GC and reports its RSS and heap; the table shows whether memory is flat.
//
//   npm run bench:soak                      # 10 minutes, embedded database
//   SOAK_SECONDS=120 npm run bench:soak     # shorter
//   SOAK_DATABASE_URL=postgres://… SOAK_REDIS_URL=redis://… npm run bench:soak
//
// The sampler (bench/soakSampler.ts) is loaded with --import into the service process
// only here; the service itself has no memory endpoint.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { serviceEnv } from './env.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 30);
const CYCLE_CLIENTS = Number(process.env.SOAK_CYCLE_CLIENTS ?? 4);
const READ_CLIENTS = Number(process.env.SOAK_READ_CLIENTS ?? 2);
const MAIN = fileURLToPath(new URL('../server/main.js', import.meta.url));
const SAMPLER = pathToFileURL(fileURLToPath(new URL('./soakSampler.js', import.meta.url))).href;

interface Sample {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'vault-soak-'));
  const env: Record<string, string> = {
    ...serviceEnv(dataDir),
    PATH: process.env.PATH ?? '',
    CRYPTO_THREADS: '1',
    LOG_LEVEL: 'info',
  };
  if (process.env.SOAK_DATABASE_URL) env.DATABASE_URL = process.env.SOAK_DATABASE_URL;
  if (process.env.SOAK_REDIS_URL) env.REDIS_URL = process.env.SOAK_REDIS_URL;
  const child = spawn(process.execPath, ['--expose-gc', '--import', SAMPLER, MAIN], { env, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/[\d.]+:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`service exited (${code}) before listening`)));
  });
  const pending: Array<(s: Sample) => void> = [];
  child.on('message', (m) => pending.shift()?.(m as Sample));
  const sample = () => new Promise<Sample>((resolve) => (pending.push(resolve), child.send('sample')));

  const json = async (path: string, init: { method?: string; token?: string; body?: unknown } = {}) => {
    const res = await fetch(`${url}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'content-type': 'application/json', ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  };

  // The README's set-up sequence.
  const admin = (await json('/api/v1/admin/signup', { method: 'POST', body: { email: 'soak@example.test', password: 'a long soak passphrase', firstName: 'Soak' } })).token as string;
  const project = (await json('/api/v1/projects', { method: 'POST', token: admin, body: { projectName: 'homelab' } })).project.id as string;
  const secrets = Array.from({ length: 14 }, (_, i) => ({ secretKey: `KEY_${i}`, secretValue: randomBytes(32).toString('hex') }));
  await json('/api/v3/secrets/batch/raw', { method: 'POST', token: admin, body: { projectSlug: 'homelab', environment: 'prod', secretPath: '/', secrets } });
  const identity = (await json('/api/v1/identities', { method: 'POST', token: admin, body: { name: 'homelab-eso' } })).identity.id as string;
  const clientId = (await json(`/api/v1/auth/universal-auth/identities/${identity}`, { method: 'POST', token: admin, body: {} })).identityUniversalAuth.clientId as string;
  const clientSecret = (await json(`/api/v1/auth/universal-auth/identities/${identity}/client-secrets`, { method: 'POST', token: admin, body: {} })).clientSecret as string;
  await json(`/api/v1/projects/${project}/memberships/identities/${identity}`, { method: 'POST', token: admin, body: { role: 'member' } });

  const LIST = '/api/v3/secrets/raw?environment=prod&expandSecretReferences=true&include_imports=false&recursive=false&secretPath=%2F&workspaceId=&workspaceSlug=homelab';
  let cycles = 0;
  let reads = 0;
  let errors = 0;
  let stop = false;
  const cycleClient = async () => {
    while (!stop) {
      try {
        const token = (await json('/api/v1/auth/universal-auth/login', { method: 'POST', body: { clientId, clientSecret } })).accessToken as string;
        await json(LIST, { token });
        await json('/api/v1/auth/token/revoke', { method: 'POST', token, body: { accessToken: token } });
        cycles++;
      } catch {
        errors++;
      }
    }
  };
  const longLived = (await json('/api/v1/auth/universal-auth/login', { method: 'POST', body: { clientId, clientSecret } })).accessToken as string;
  const readClient = async () => {
    while (!stop) {
      try {
        await json(LIST, { token: longLived });
        reads++;
      } catch {
        errors++;
      }
    }
  };

  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  console.log(`soak: ${SECONDS} s, ${CYCLE_CLIENTS} ESO cycle clients + ${READ_CLIENTS} cached-read clients, sample every ${SAMPLE_SECONDS} s (full GC first)`);
  console.log('| t (s) | ESO cycles | cached reads | errors | RSS (MB) | heap after GC (MB) | external (MB) |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  const rows: Array<{ t: number; cycles: number; s: Sample }> = [];
  const print = (t: number, s: Sample) => {
    rows.push({ t, cycles, s });
    console.log(`| ${t} | ${cycles} | ${reads} | ${errors} | ${mb(s.rss)} | ${mb(s.heapUsed)} | ${mb(s.external)} |`);
  };
  print(0, await sample());
  const clients = [...Array.from({ length: CYCLE_CLIENTS }, cycleClient), ...Array.from({ length: READ_CLIENTS }, readClient)];
  const started = Date.now();
  for (let t = SAMPLE_SECONDS; t <= SECONDS; t += SAMPLE_SECONDS) {
    await new Promise((r) => setTimeout(r, started + t * 1000 - Date.now()));
    print(t, await sample());
  }
  stop = true;
  await Promise.all(clients);

  // Flat: compare the second half's first and last samples (the first minutes fill caches).
  const mid = rows[Math.floor(rows.length / 2)]!;
  const last = rows[rows.length - 1]!;
  const perKCycles = (b: number) => (last.cycles > mid.cycles ? ((b / (last.cycles - mid.cycles)) * 1000) / 1024 : 0);
  console.log(
    `\nsecond half (t=${mid.t}..${last.t} s, ${last.cycles - mid.cycles} cycles): heap after GC ${mb(mid.s.heapUsed)} → ${mb(last.s.heapUsed)} MB ` +
      `(${perKCycles(last.s.heapUsed - mid.s.heapUsed).toFixed(1)} KB per 1000 cycles), RSS ${mb(mid.s.rss)} → ${mb(last.s.rss)} MB; errors ${errors}`,
  );
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
  if (errors > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
