// The bench: the real service in-process, the ESO hot paths under autocannon, and a
// ceiling (bare uWS answering the same bytes) measured in the same run, so the ratio
// says how close the service comes to what this machine can do at all.
//
//   npm run bench                       (builds, then node dist/bench/run.js)
//   BENCH_SECONDS=10 BENCH_CONNECTIONS=50 BENCH_WARMUP_SECONDS=2 CRYPTO_THREADS=1
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres  (admin URL; a fresh db is made)
//   BENCH_REDIS_URL=redis://127.0.0.1:6379
import autocannon, { type Options, type Result } from 'autocannon';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startCeiling, type Ceiling } from './ceiling.js';
import { processScenarios, startServiceProcess, type ServiceProcess } from './process.js';
import { eventRows } from './events.js';
import { BIG_FOLDER_PATH, bigFolder, halfLoad, readLines, TARGETS } from './read.js';
import { freshDatabase, seedHomelab, startBenchService, type BenchService, type Seeded } from './service.js';

function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer in [${min}, ${max}], got ${JSON.stringify(raw)}`);
  }
  return n;
}

const SECONDS = intEnv('BENCH_SECONDS', 10, 1, 600);
const WARMUP_SECONDS = intEnv('BENCH_WARMUP_SECONDS', 2, 0, 60);
/**
 * BENCH_PARTS=http,process,events (default all three): the in-process autocannon scenarios,
 * the service-process rows, the change events' rows (bench/events.ts); `eso` alone: only the
 * ESO cycle (a), for quick before/after runs.
 */
const PARTS = (process.env.BENCH_PARTS ?? 'http,process,events').split(',').map((p) => p.trim());
/** Idle event subscribers attached during the events part's second cached-read run. */
const SUBSCRIBERS = intEnv('BENCH_SUBSCRIBERS', 500, 0, 5000);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 50, 1, 2000);

const RAW_ROUTE = '/api/v3/secrets/raw';
// What ESO's Infisical provider sends (through Infisical's Go SDK), byte for byte in order.
const RAW_PATH =
  `${RAW_ROUTE}?environment=prod&expandSecretReferences=true&include_imports=false` +
  '&recursive=false&secretPath=%2F&workspaceId=&workspaceSlug=homelab';
const LOGIN_PATH = '/api/v1/auth/universal-auth/login';
const REVOKE_PATH = '/api/v1/auth/token/revoke';
const JSON_TYPE = 'application/json; charset=utf-8';

const hook = (name: string) => fileURLToPath(new URL(`./hooks/${name}.cjs`, import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL('../../bench/results/', import.meta.url));

interface ScenarioReport {
  id: string;
  name: string;
  target: string;
  requests: number;
  durationSeconds: number;
  reqPerSec: number;
  cyclesPerSec?: number;
  latencyMs: { p50: number; p90: number; p99: number; mean: number; max: number };
  /** connections / throughput (Little's law): the mean latency, finer than the histogram's whole ms. */
  meanLatencyFromThroughputMs: number;
  /**
   * The bench process's main thread during the measured run (the in-process service's
   * and, for (c), the ceiling's; autocannon runs in its own thread): the share of the time
   * it was busy, and its busy time per request. The cost of a request on the thread that
   * bounds the service, less moved than throughput by what else the machine runs.
   */
  mainThread: { utilization: number; busyMicrosPerRequest: number; busyMicrosPerCycle?: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  mismatches: number;
  statusCodes: Record<string, number>;
  warmup?: { requests: number; non2xx: number; errors: number; mismatches: number };
}

function statusCodes(r: Result): Record<string, number> {
  return Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, s]) => [code, s.count]));
}

/**
 * BENCH_CPU_PROF=<dir>: the bench process's main thread (the in-process service's, and the
 * ceiling's for (c); autocannon runs in its own thread) is profiled during `run`, written
 * as `<dir>/inproc-<pid>-<label>.cpuprofile`. The profiler slows what it watches: figures
 * of such a run are for reading the profile, not for the table.
 */
async function profiled<T>(label: string, run: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/inproc-${process.pid}-${label}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
  }
}

/** A short warm-up (reported, not measured), then the measured run. */
async function scenario(id: string, name: string, opts: Options, requestsPerCycle = 1): Promise<ScenarioReport> {
  const base: Options = { connections: CONNECTIONS, workers: 1, timeout: 10, ...opts };
  process.stdout.write(`(${id}) ${name}: `);
  let warmup: ScenarioReport['warmup'];
  if (WARMUP_SECONDS > 0) {
    process.stdout.write(`warm-up ${WARMUP_SECONDS} s, `);
    const w = await autocannon({ ...base, duration: WARMUP_SECONDS });
    warmup = { requests: w.requests.total, non2xx: w.non2xx, errors: w.errors, mismatches: w.mismatches };
  }
  process.stdout.write(`measuring ${SECONDS} s ... `);
  const loopBefore = performance.eventLoopUtilization();
  const r = await profiled(`${id}`, () => autocannon({ ...base, duration: SECONDS }));
  const loop = performance.eventLoopUtilization(loopBefore);
  const reqPerSec = r.requests.total / r.duration;
  const busyMicrosPerRequest = (1000 * loop.active) / Math.max(1, r.requests.total);
  const mainThread = {
    utilization: loop.utilization,
    busyMicrosPerRequest,
    ...(requestsPerCycle > 1 ? { busyMicrosPerCycle: busyMicrosPerRequest * requestsPerCycle } : {}),
  };
  console.log(
    `${Math.round(reqPerSec)} req/s; main thread ${(100 * mainThread.utilization).toFixed(0)}% busy, ` +
      `${mainThread.busyMicrosPerRequest.toFixed(0)} µs per request`,
  );
  return {
    id,
    name,
    target: base.url,
    requests: r.requests.total,
    durationSeconds: r.duration,
    reqPerSec,
    ...(requestsPerCycle > 1 ? { cyclesPerSec: reqPerSec / requestsPerCycle } : {}),
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, mean: r.latency.average, max: r.latency.max },
    meanLatencyFromThroughputMs: (1000 * (base.connections ?? CONNECTIONS)) / reqPerSec,
    mainThread,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches,
    statusCodes: statusCodes(r),
    warmup,
  };
}

async function login(url: string, s: Seeded): Promise<string> {
  const res = await fetch(`${url}${LOGIN_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: s.clientId, clientSecret: s.clientSecret }),
  });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

/** One real request: the bytes the ceiling will serve, and a check of what they say. */
async function captureRaw(url: string, token: string, expectedSecrets: number): Promise<{ body: Buffer; contentType: string; etag: string }> {
  const res = await fetch(`${url}${RAW_PATH}`, { headers: { authorization: `Bearer ${token}` } });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`raw read failed: ${res.status} ${body.toString('utf8').slice(0, 500)}`);
  const contentType = res.headers.get('content-type') ?? '';
  if (contentType.toLowerCase() !== JSON_TYPE) throw new Error(`raw read: unexpected Content-Type ${JSON.stringify(contentType)}`);
  const parsed = JSON.parse(body.toString('utf8')) as { secrets?: unknown[] };
  if (!Array.isArray(parsed.secrets) || parsed.secrets.length !== expectedSecrets) {
    throw new Error(`raw read: expected ${expectedSecrets} secrets, got ${Array.isArray(parsed.secrets) ? parsed.secrets.length : 'none'}`);
  }
  const etag = res.headers.get('etag');
  if (!etag) throw new Error('raw read: no ETag');
  return { body, contentType, etag };
}

const fmt = (n: number, digits = 0) => n.toFixed(digits);
// autocannon's latency histogram holds whole milliseconds (values are truncated), so 0 means "under 1 ms".
const ms = (n: number) => (n < 1 ? '<1' : n.toFixed(0));

function table(rows: ScenarioReport[]): string {
  const head = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx'];
  const body = rows.map((r) => [
    `(${r.id}) ${r.name}`,
    r.cyclesPerSec !== undefined ? `${fmt(r.reqPerSec)} (${fmt(r.cyclesPerSec)} cycles/s)` : fmt(r.reqPerSec),
    ms(r.latencyMs.p50),
    ms(r.latencyMs.p99),
    String(r.non2xx),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/** The in-process scenarios (a), (b), (c) on one backend. */
async function runBackend(backend: Backend): Promise<{ code: number; figures: Figure[] }> {
  const started = new Date();
  const loadAtStart = loadavg()[0]!;
  let service: BenchService | undefined;
  let ceiling: Ceiling | undefined;
  try {
    service = await startBenchService({ adminUrl: backend.adminUrl, redisUrl: backend.redisUrl });
    const seeded = await seedHomelab(service.running.services);
    const token = await login(service.url, seeded);
    const captured = await captureRaw(service.url, token, seeded.secretCount);

    ceiling = await startCeiling(RAW_ROUTE, captured.body, JSON_TYPE);
    const check = await fetch(`${ceiling.url}${RAW_PATH}`);
    const checkBody = Buffer.from(await check.arrayBuffer());
    if (check.status !== 200 || !checkBody.equals(captured.body) || check.headers.get('content-type') !== JSON_TYPE) {
      throw new Error('ceiling does not answer the captured bytes');
    }

    const cpuList = cpus();
    console.log(
      `bench: ${cpuList.length} cores (${cpuList[0]?.model.trim() ?? 'unknown cpu'}), node ${process.version}, ` +
        `${service.backend}, CRYPTO_THREADS=${service.cryptoThreads}`,
    );
    if (loadAtStart > 0.5) {
      console.log(`       warning: load average ${loadAtStart.toFixed(2)} at start (last minute, this bench included); other work skews the figures`);
    }
    console.log(
      `       ${CONNECTIONS} connections, ${SECONDS} s measured after ${WARMUP_SECONDS} s warm-up, ` +
        `response ${captured.body.length} bytes (${seeded.secretCount} secrets)\n`,
    );

    const json = { 'content-type': 'application/json' };
    const reports: ScenarioReport[] = [];
    reports.push(
      await scenario(
        'a',
        'ESO sync cycle (login, read, revoke)',
        {
          url: service.url,
          requests: [
            {
              method: 'POST',
              path: LOGIN_PATH,
              headers: json,
              body: JSON.stringify({ clientId: seeded.clientId, clientSecret: seeded.clientSecret }),
              onResponse: hook('eso-login-response'),
            },
            { method: 'GET', path: RAW_PATH, setupRequest: hook('eso-read-setup') },
            { method: 'POST', path: REVOKE_PATH, headers: json, setupRequest: hook('eso-revoke-setup') },
          ],
        },
        3,
      ),
    );
    if (!PARTS.includes('http')) {
      const a = reports[0]!;
      console.log(
        `ESO cycles/s (a) = ${a.cyclesPerSec!.toFixed(0)}; main thread ${a.mainThread.busyMicrosPerCycle!.toFixed(0)} µs per cycle; ` +
          `non-2xx ${a.non2xx}, errors ${a.errors}`,
      );
      return {
        code: a.non2xx > 0 || a.errors > 0 ? 1 : 0,
        figures: [{ row: '(a) ESO cycle (login, list, revoke)', backend: backend.id, value: a.cyclesPerSec!, unit: 'cycles/s', target: 1000, atLeast: true }],
      };
    }
    const authorization = `Bearer ${token}`;
    const bodyText = captured.body.toString('utf8');
    reports.push(
      await scenario('b', 'raw list, 14 secrets, reused token', {
        url: `${service.url}${RAW_PATH}`,
        headers: { authorization },
        expectBody: bodyText,
      }),
    );
    reports.push(
      await scenario('c', 'ceiling: bare uWS, same bytes', {
        url: `${ceiling.url}${RAW_PATH}`,
        headers: { authorization },
        expectBody: bodyText,
      }),
    );

    // The Kubernetes operator's refresh: If-None-Match with the tag of its last answer, 304.
    reports.push(
      await scenario('b304', 'raw list, If-None-Match current (304)', {
        url: `${service.url}${RAW_PATH}`,
        headers: { authorization, 'if-none-match': captured.etag },
      }),
    );

    const [a, b, c, b304] = reports as [ScenarioReport, ScenarioReport, ScenarioReport, ScenarioReport];
    const notModifiedRatio = b304.reqPerSec / b.reqPerSec;
    const throughputRatio = b.reqPerSec / c.reqPerSec;
    const p99Ratio = c.latencyMs.p99 > 0 ? b.latencyMs.p99 / c.latencyMs.p99 : null;

    console.log('');
    console.log(table(reports));
    console.log('');
    console.log(`ratio (b)/(c) = ${throughputRatio.toFixed(2)}`);
    console.log(`ratio (b304)/(b) = ${notModifiedRatio.toFixed(2)} (a 304 against the cached read it saves)`);
    console.log(
      `p99 ratio (b)/(c) = ${p99Ratio === null ? `n/a (ceiling p99 < 1 ms: ${b.latencyMs.p99} ms vs ${c.latencyMs.p99} ms)` : p99Ratio.toFixed(2)}`,
    );
    console.log(`ESO cycles/s (a) = ${a.cyclesPerSec!.toFixed(0)}; main thread ${a.mainThread.busyMicrosPerCycle!.toFixed(0)} µs per cycle`);

    process.stdout.write(`\n(b½) raw list at half of (b)'s throughput, ${SECONDS} s ... `);
    const half = await halfLoad(`${service.url}${RAW_PATH}`, `${ceiling.url}${RAW_PATH}`, authorization, bodyText, b.reqPerSec, SECONDS, CONNECTIONS, WARMUP_SECONDS);
    console.log(`${half.reqPerSec.toFixed(0)} req/s`);
    process.stdout.write('(d) seeding one folder of 10,000 secrets, then reading it cold and warm ... ');
    const big = await bigFolder(service.running.services, service.url, 'homelab', seeded.projectId, token);
    console.log(`seeded in ${big.seedSeconds.toFixed(1)} s, answer ${big.responseBytes} bytes\n`);
    for (const line of readLines(half, big)) console.log(line);

    const problems: string[] = [];
    for (const r of reports) {
      const what = (phase: string, x: { non2xx: number; errors: number; mismatches: number }) => {
        if (x.non2xx > 0 || x.errors > 0 || x.mismatches > 0) {
          problems.push(`(${r.id}) ${phase}: non-2xx ${x.non2xx}, connection errors ${x.errors}, body mismatches ${x.mismatches}`);
        }
      };
      if (r.id === 'b304') {
        // Every answer a 304 (autocannon counts them as non-2xx).
        const codes = Object.keys(r.statusCodes);
        if (codes.length !== 1 || codes[0] !== '304' || r.errors > 0) problems.push(`(b304) status codes: ${JSON.stringify(r.statusCodes)}, connection errors ${r.errors}`);
        continue;
      }
      what('measured', r);
      if (r.warmup) what('warm-up', r.warmup);
      if (r.non2xx > 0) problems.push(`(${r.id}) status codes: ${JSON.stringify(r.statusCodes)}`);
    }
    if (half.non2xx > 0 || half.errors > 0 || half.mismatches > 0 || half.unanswered > 0) {
      problems.push(`(b½): non-2xx ${half.non2xx}, connection errors ${half.errors}, body mismatches ${half.mismatches}, unanswered ${half.unanswered}`);
    }
    const hw = half.warmup;
    if (hw && (hw.non2xx > 0 || hw.errors > 0 || hw.mismatches > 0 || hw.unanswered > 0)) {
      problems.push(`(b½) warm-up: non-2xx ${hw.non2xx}, connection errors ${hw.errors}, body mismatches ${hw.mismatches}, unanswered ${hw.unanswered}`);
    }
    const hc = half.ceiling;
    if (hc.non2xx > 0 || hc.errors > 0 || hc.mismatches > 0 || hc.unanswered > 0) {
      problems.push(`(b½) ceiling: non-2xx ${hc.non2xx}, connection errors ${hc.errors}, body mismatches ${hc.mismatches}, unanswered ${hc.unanswered}`);
    }
    const ac = half.autocannon;
    if (ac.non2xx > 0 || ac.errors > 0 || ac.mismatches > 0) {
      problems.push(`(b½) autocannon: non-2xx ${ac.non2xx}, connection errors ${ac.errors}, body mismatches ${ac.mismatches}`);
    }
    problems.push(...big.problems);

    mkdirSync(RESULTS_DIR, { recursive: true });
    const out = {
      date: started.toISOString(),
      machine: {
        cores: cpuList.length,
        cpu: cpuList[0]?.model.trim() ?? 'unknown',
        memoryGiB: +(totalmem() / 2 ** 30).toFixed(1),
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        loadAverage1mAtStart: +loadAtStart.toFixed(2),
        loadAverage1mAtEnd: +loadavg()[0]!.toFixed(2),
      },
      config: {
        seconds: SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
        cryptoThreads: service.cryptoThreads,
        backend: service.backend,
        responseBytes: captured.body.length,
        secrets: seeded.secretCount,
        rawPath: RAW_PATH,
      },
      scenarios: reports,
      ratios: { throughputBOverC: throughputRatio, p99BOverC: p99Ratio, throughputB304OverB: notModifiedRatio },
      read: { halfLoad: half, bigFolder: big },
      ok: problems.length === 0,
      problems,
    };
    writeFileSync(`${RESULTS_DIR}latest-${backend.id}.json`, JSON.stringify(out, null, 2) + '\n');
    console.log(`results: ${RESULTS_DIR}latest-${backend.id}.json`);

    const figures: Figure[] = [
      { row: '(a) ESO cycle (login, list, revoke)', backend: backend.id, value: a.cyclesPerSec!, unit: 'cycles/s', target: 1000, atLeast: true },
      { row: '(b)/(c) throughput ratio, 14 secrets', backend: backend.id, value: throughputRatio, unit: '', target: 0.6, atLeast: true, digits: 2 },
      { row: '(b304)/(b) throughput ratio, 304 against the cached read', backend: backend.id, value: notModifiedRatio, unit: '', target: 1, atLeast: true, digits: 2 },
      { row: "(b) p99 at half of (b)'s throughput", backend: backend.id, value: half.latencyMs.p99, unit: 'ms', target: TARGETS.halfLoadP99Ms, atLeast: false },
      { row: `10k folder (${BIG_FOLDER_PATH}), cold read (median)`, backend: backend.id, value: big.coldMs, unit: 'ms', target: TARGETS.bigColdMs, atLeast: false },
      { row: `10k folder (${BIG_FOLDER_PATH}), warm read (median)`, backend: backend.id, value: big.warmMs.median, unit: 'ms', target: TARGETS.bigWarmMs, atLeast: false },
    ];
    if (problems.length) {
      console.error('\nBENCH FAILED: requests failed during the run');
      for (const p of problems) console.error(`  ${p}`);
      return { code: 1, figures };
    }
    return { code: 0, figures };
  } finally {
    ceiling?.close();
    if (service) await service.close();
  }
}

interface Backend {
  id: 'embedded' | 'postgres';
  adminUrl?: string;
  redisUrl?: string;
}

/** Embedded always; PostgreSQL + Redis too when BENCH_DATABASE_URL is set. BENCH_BACKENDS=embedded|postgres narrows it. */
function backends(): Backend[] {
  const adminUrl = process.env.BENCH_DATABASE_URL?.trim() || undefined;
  const redisUrl = process.env.BENCH_REDIS_URL?.trim() || undefined;
  const only = process.env.BENCH_BACKENDS?.trim();
  const all: Backend[] = [{ id: 'embedded' }];
  if (adminUrl) all.push({ id: 'postgres', adminUrl, redisUrl });
  if (only === 'postgres' && !adminUrl) throw new Error('BENCH_BACKENDS=postgres needs BENCH_DATABASE_URL');
  return only ? all.filter((b) => b.id === only) : all;
}

/** One figure of issue 13's table: the value, its target and the ratio value ÷ target. */
interface Figure {
  row: string;
  backend: Backend['id'];
  value: number;
  unit: string;
  target: number;
  /** true: the target is a floor (≥); false: a ceiling (≤). */
  atLeast: boolean;
  digits?: number;
  note?: string;
}

function figuresTable(figures: Figure[]): string {
  const head = ['row', 'backend', 'figure', 'target', 'ratio', 'met'];
  const body = figures.map((f) => [
    f.row,
    f.backend,
    `${f.value.toFixed(f.digits ?? 0)}${f.unit ? ` ${f.unit}` : ''}`,
    `${f.atLeast ? '≥' : '≤'} ${f.target}${f.unit ? ` ${f.unit}` : ''}`,
    (f.value / f.target).toFixed(2),
    (f.atLeast ? f.value >= f.target : f.value <= f.target) ? 'yes' : 'NO',
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

/**
 * The rows that need the service as a process of its own (bench/process.ts): RSS right
 * after start and after the 10k scenario, and the 10k batch create.
 */
async function runProcessRows(backend: Backend): Promise<Figure[]> {
  const db = backend.adminUrl ? await freshDatabase(backend.adminUrl) : undefined;
  let svc: ServiceProcess | undefined;
  try {
    console.log(`\n[${backend.id}] service process (node dist/server/main.js): RSS and the 10k batch create`);
    svc = await startServiceProcess({ databaseUrl: db?.url, redisUrl: backend.redisUrl });
    const p = await processScenarios(svc);
    console.log(
      `  RSS after start ${p.rssAfterStartMB.toFixed(0)} MB; 10k batch create ${p.batchCreate10kSeconds.toFixed(2)} s ` +
        `(chunk of 500: p50 ${p.batchChunkMs.p50.toFixed(0)} ms, max ${p.batchChunkMs.max.toFixed(0)} ms; ` +
        `${p.auditEntriesAdded} audit entries added, chain verified); RSS after ${p.rssAfter10kMB.toFixed(0)} MB; load ${loadavg()[0]!.toFixed(1)}`,
    );
    const figures: Figure[] = [
      { row: '10k batch create (20 × 500)', backend: backend.id, value: p.batchCreate10kSeconds, unit: 's', target: 3, atLeast: false, digits: 2 },
    ];
    if (backend.id === 'embedded') {
      figures.push({ row: 'RSS right after start', backend: backend.id, value: p.rssAfterStartMB, unit: 'MB', target: 150, atLeast: false });
      figures.push({ row: 'RSS after the 10k scenario', backend: backend.id, value: p.rssAfter10kMB, unit: 'MB', target: 250, atLeast: false });
    } else {
      figures.push({ row: 'RSS right after start', backend: backend.id, value: p.rssAfterStartMB, unit: 'MB', target: 200, atLeast: false, note: 'no target of its own' });
      figures.push({ row: 'RSS after the 10k scenario', backend: backend.id, value: p.rssAfter10kMB, unit: 'MB', target: 200, atLeast: false });
    }
    if (p.auditEntriesAdded < 10_000) throw new Error(`10k batch create: only ${p.auditEntriesAdded} audit entries were added`);
    return figures;
  } finally {
    await svc?.close();
    await db?.drop();
  }
}

/** The change events' rows: write → event latency, and the cached read with subscribers attached. */
async function runEventRows(backend: Backend): Promise<{ code: number; figures: Figure[] }> {
  console.log(`\n[${backend.id}] change events: latency over 200 writes, then the cached read without and with ${SUBSCRIBERS} subscribers + 1 that never reads`);
  const e = await eventRows(backend, { seconds: SECONDS, connections: CONNECTIONS, subscribers: SUBSCRIBERS, samples: 200 });
  const l = e.latencyMs;
  const r = e.read;
  console.log(`  write acknowledged → event (${l.where}): p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(1)} ms (${l.samples} writes)`);
  console.log(
    `  cached read: ${r.without.reqPerSec.toFixed(0)} req/s, p99 ${r.without.p99} ms without subscribers; ` +
      `${r.with.reqPerSec.toFixed(0)} req/s, p99 ${r.with.p99} ms with ${r.subscribers} (+1 slow: ${r.slowDisconnected ? 'disconnected' : 'still open'}); ` +
      `${r.eventsDuringRun} events fanned out meanwhile`,
  );
  for (const p of r.problems) console.error(`  problem: ${p}`);
  const p99Ratio = r.with.p99 / Math.max(1, r.without.p99);
  return {
    code: r.problems.length > 0 ? 1 : 0,
    figures: [
      { row: 'write acknowledged → event, p50', backend: backend.id, value: l.p50, unit: 'ms', target: 1000, atLeast: false, digits: 1 },
      { row: 'write acknowledged → event, p99', backend: backend.id, value: l.p99, unit: 'ms', target: 1000, atLeast: false, digits: 1 },
      { row: `cached read p99 with ${r.subscribers} subscribers ÷ without`, backend: backend.id, value: p99Ratio, unit: '', target: 1.2, atLeast: false, digits: 2 },
      { row: `cached read req/s with ${r.subscribers} subscribers ÷ without`, backend: backend.id, value: r.with.reqPerSec / r.without.reqPerSec, unit: '', target: 0.9, atLeast: true, digits: 2 },
    ],
  };
}

/**
 * Several backends: each runs in a process of its own (this file again, narrowed by
 * BENCH_BACKENDS), so one backend's run leaves nothing behind for the next (heap, V8
 * flags the embedded database sets, native memory), and the order of the runs does
 * not change their figures. The figures come back through a file.
 */
async function eachInItsOwnProcess(list: Backend[]): Promise<number> {
  const { spawn } = await import('node:child_process');
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  let code = 0;
  const figures: Figure[] = [];
  try {
    for (const backend of list) {
      const file = join(dir, `${backend.id}.json`);
      const child = spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
        env: { ...process.env, BENCH_BACKENDS: backend.id, BENCH_FIGURES_FILE: file },
        stdio: 'inherit',
      });
      const exit = await new Promise<number>((resolve) => child.on('exit', (c) => resolve(c ?? 1)));
      code = Math.max(code, exit);
      try {
        figures.push(...(JSON.parse(readFileSync(file, 'utf8')) as Figure[]));
      } catch {
        console.error(`bench: the ${backend.id} run wrote no figures (exit ${exit})`);
        code = Math.max(code, 1);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  printFigures(figures, 'both backends');
  saveFigures(figures);
  return code;
}

function printFigures(figures: Figure[], which: string): void {
  console.log(`\nIssue 13's rows, ${which} (load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}):\n`);
  console.log(figuresTable(figures));
}

/** bench/results/latest.json (gitignored). */
function saveFigures(figures: Figure[]): void {
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(`${RESULTS_DIR}latest.json`, JSON.stringify({ date: new Date().toISOString(), loadAverage: loadavg(), figures }, null, 2) + '\n');
  console.log(`results: ${RESULTS_DIR}latest.json`);
}

async function main(): Promise<number> {
  const list = backends();
  if (list.length > 1) return eachInItsOwnProcess(list);
  // Everything is bounded in time: per backend three scenarios, the process rows, and generous set-up and tear-down.
  const budgetMs = list.length * (5 * (SECONDS + WARMUP_SECONDS) + 600) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${budgetMs / 1000} s; giving up`);
    process.exit(2);
  }, budgetMs);
  watchdog.unref();
  let code = 0;
  const figures: Figure[] = [];
  for (const backend of list) {
    console.log(`\n=== backend: ${backend.id} ===`);
    if (PARTS.includes('http') || PARTS.includes('eso')) {
      const r = await runBackend(backend);
      code = Math.max(code, r.code);
      figures.push(...r.figures);
    }
    if (PARTS.includes('process')) figures.push(...(await runProcessRows(backend)));
    if (PARTS.includes('events')) {
      const r = await runEventRows(backend);
      code = Math.max(code, r.code);
      figures.push(...r.figures);
    }
  }
  printFigures(figures, list.map((b) => b.id).join(', '));
  // A child of eachInItsOwnProcess hands its figures back; a run of one backend keeps them.
  const figuresFile = process.env.BENCH_FIGURES_FILE;
  if (figuresFile) writeFileSync(figuresFile, JSON.stringify(figures));
  else saveFigures(figures);
  return code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('bench failed:', err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
