// The read side's scenarios of issue 13, kept apart from run.ts's table and write rows:
//   - (b½) the raw list at half of (b)'s measured throughput, evenly paced: its p99
//     (target ≤ 5 ms);
//   - (d) one folder of 10,000 secrets: the first read of it since start (cold: nothing
//     cached on the main thread nor rendered in a worker; target ≤ 200 ms) and warm
//     sequential reads (target ≤ 50 ms each).
import autocannon, { type Result } from 'autocannon';
import { SYSTEM } from '../server/domain/access.js';
import type { RunningService } from '../server/app.js';
import { pacedLoad, type PacedReport } from './paced.js';

export const BIG_FOLDER_SECRETS = 10_000;
export const BIG_FOLDER_PATH = '/bulk';
const CHUNK = 1000;
const COLD_READS = 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const TARGETS = { halfLoadP99Ms: 5, bigColdMs: 200, bigWarmMs: 50 } as const;

export interface HalfLoadReport {
  rate: number;
  reqPerSec: number;
  /** Paced (bench/paced.ts): from when each request was due to its answer. */
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  mismatches: number;
  unanswered: number;
  /** What went wrong in the paced warm-up (not measured). */
  warmup?: PacedReport['warmup'];
  /** The bare ceiling (c) paced at the same rate, the same way: what this machine and client allow. */
  ceiling: { p50: number; p99: number; max: number; non2xx: number; errors: number; mismatches: number; unanswered: number };
  /**
   * The same rate through autocannon's overallRate, as this row was measured before
   * 2026-11-26: full speed until each second's quota is used (whole milliseconds).
   */
  autocannon: { p50: number; p99: number; max: number; non2xx: number; errors: number; mismatches: number };
}

/**
 * (b) at a fixed rate of half its measured maximum, evenly paced: latency when the
 * service is not saturated. Then autocannon at the same rate, for comparison.
 */
export async function halfLoad(
  url: string,
  ceilingUrl: string,
  authorization: string,
  expectBody: string,
  maxReqPerSec: number,
  seconds: number,
  connections: number,
  warmupSeconds: number,
): Promise<HalfLoadReport> {
  const rate = Math.max(1, Math.round(maxReqPerSec / 2));
  const paced = await pacedLoad({ url, headers: { authorization }, expectBody, rate, seconds, connections, warmupSeconds });
  const bare = await pacedLoad({ url: ceilingUrl, headers: { authorization }, expectBody, rate, seconds, connections, warmupSeconds });
  const r: Result = await autocannon({ url, headers: { authorization }, expectBody, connections, workers: 1, timeout: 10, duration: seconds, overallRate: rate });
  return {
    rate,
    reqPerSec: paced.reqPerSec,
    latencyMs: paced.latencyMs,
    non2xx: paced.non2xx,
    errors: paced.errors,
    mismatches: paced.mismatches,
    unanswered: paced.unanswered,
    ...(paced.warmup ? { warmup: paced.warmup } : {}),
    ceiling: { ...bare.latencyMs, non2xx: bare.non2xx, errors: bare.errors, mismatches: bare.mismatches, unanswered: bare.unanswered },
    autocannon: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max, non2xx: r.non2xx, errors: r.errors, mismatches: r.mismatches },
  };
}

export interface BigFolderReport {
  secrets: number;
  responseBytes: number;
  seedSeconds: number;
  /** The median of COLD_READS first reads, each after every cache was dropped. */
  coldMs: number;
  coldAllMs: number[];
  warmMs: { median: number; p95: number; max: number; reads: number };
  /**
   * CPU time of this whole process (main thread, crypto workers, and the fetch client,
   * which runs here too) during the cold read and per warm read (median): on a shared
   * machine, less skewed by other work than the wall-clock figures.
   */
  cpuMs: { cold: number; warmMedian: number };
  problems: string[];
}

/**
 * Seeds BIG_FOLDER_SECRETS secrets under prod BIG_FOLDER_PATH of project `projectId`
 * (through the domain, in chunks of 1000), drops every main-thread cache and every
 * rendered answer in the workers (what a restart leaves: the database's own cache and
 * the code's JIT state aside), then times the first read and `warmReads` more, one at a
 * time, over HTTP with the ESO's query.
 */
export async function bigFolder(svc: RunningService['services'], baseUrl: string, projectSlug: string, projectId: string, token: string, warmReads = 20): Promise<BigFolderReport> {
  const seedStart = performance.now();
  await svc.folders.create(SYSTEM, { project: { id: projectId }, environment: 'prod', parentPath: '/', name: BIG_FOLDER_PATH.slice(1) });
  for (let at = 0; at < BIG_FOLDER_SECRETS; at += CHUNK) {
    const secrets = [];
    for (let i = at; i < Math.min(at + CHUNK, BIG_FOLDER_SECRETS); i++) {
      secrets.push({ key: `BULK_${String(i).padStart(5, '0')}`, value: `value-${i}-${'x'.repeat(32)}` });
    }
    await svc.secrets.createMany(SYSTEM, { project: { id: projectId }, environment: 'prod', secretPath: BIG_FOLDER_PATH, secrets });
  }
  const seedSeconds = (performance.now() - seedStart) / 1000;

  // "After start": nothing of this folder (nor of anything else) cached on the main
  // thread, no rendered answer in any worker.
  const asAfterStart = () => {
    svc.caches.projects.clear();
    svc.caches.roles.clear();
    svc.caches.folders.clear();
    svc.caches.accessTokens.clear();
    svc.crypto.forgetRendered('');
  };

  const url =
    `${baseUrl}/api/v3/secrets/raw?environment=prod&expandSecretReferences=true&include_imports=false` +
    `&recursive=false&secretPath=${encodeURIComponent(BIG_FOLDER_PATH)}&workspaceId=&workspaceSlug=${encodeURIComponent(projectSlug)}`;
  const problems: string[] = [];
  let responseBytes = 0;
  let cpu = 0;
  const read = async (): Promise<number> => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t0;
    const c = process.cpuUsage(c0);
    cpu = (c.user + c.system) / 1000;
    if (res.status !== 200) problems.push(`(d) status ${res.status}`);
    responseBytes = body.length;
    return ms;
  };
  // One cold read is one sample of a noisy figure: COLD_READS of them, each after
  // dropping every cache again, and the median is the row.
  const coldAll: number[] = [];
  const coldCpuAll: number[] = [];
  for (let i = 0; i < COLD_READS; i++) {
    asAfterStart();
    coldAll.push(await read());
    coldCpuAll.push(cpu);
  }
  const coldMs = median(coldAll);
  const coldCpu = median(coldCpuAll);
  const cold = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const parsed = (await cold.json()) as { secrets?: unknown[] };
  if (!Array.isArray(parsed.secrets) || parsed.secrets.length !== BIG_FOLDER_SECRETS) {
    problems.push(`(d) expected ${BIG_FOLDER_SECRETS} secrets, got ${Array.isArray(parsed.secrets) ? parsed.secrets.length : 'none'}`);
  }
  const warm: number[] = [];
  const warmCpu: number[] = [];
  for (let i = 0; i < warmReads; i++) {
    warm.push(await read());
    warmCpu.push(cpu);
  }
  warm.sort((a, b) => a - b);
  warmCpu.sort((a, b) => a - b);
  const at = (q: number) => warm[Math.min(warm.length - 1, Math.floor(q * warm.length))]!;
  return {
    secrets: BIG_FOLDER_SECRETS,
    responseBytes,
    seedSeconds,
    coldMs,
    coldAllMs: coldAll,
    warmMs: { median: at(0.5), p95: at(0.95), max: warm[warm.length - 1]!, reads: warm.length },
    cpuMs: { cold: coldCpu, warmMedian: warmCpu[Math.floor(warmCpu.length / 2)]! },
    problems,
  };
}

/** The lines run.ts prints for these scenarios: figure, target, and target ÷ figure (≥ 1 meets it). */
export function readLines(half: HalfLoadReport, big: BigFolderReport): string[] {
  const row = (what: string, figure: number, target: number) =>
    `${what.padEnd(44)} ${figure.toFixed(1).padStart(8)} ms   target ≤ ${String(target).padStart(3)} ms   ratio ${(target / Math.max(figure, 0.001)).toFixed(2)}`;
  return [
    row(`(b½) p99 at ${half.rate} req/s (half of (b))`, half.latencyMs.p99, TARGETS.halfLoadP99Ms),
    `(b½) the bare ceiling (c) paced the same way at the same rate: p50 ${half.ceiling.p50.toFixed(1)} ms, p99 ${half.ceiling.p99.toFixed(1)} ms, max ${half.ceiling.max.toFixed(1)} ms`,
    `(b½) the same rate through autocannon's overallRate (bursts; whole ms): p50 ${half.autocannon.p50} ms, p99 ${half.autocannon.p99} ms`,
    row(`(d) ${big.secrets} secrets, cold first read (median)`, big.coldMs, TARGETS.bigColdMs),
    `(d) each cold read: ${big.coldAllMs.map((x) => x.toFixed(0)).join(', ')} ms`,
    row(`(d) ${big.secrets} secrets, warm read (median)`, big.warmMs.median, TARGETS.bigWarmMs),
    row(`(d) ${big.secrets} secrets, warm read (p95)`, big.warmMs.p95, TARGETS.bigWarmMs),
    `(d) CPU time (whole process, client included): cold ${big.cpuMs.cold.toFixed(1)} ms (median), warm ${big.cpuMs.warmMedian.toFixed(1)} ms (median)`,
  ];
}
