// An open-loop load at a fixed rate, paced evenly: what "p99 at half of (b)'s throughput"
// asks for. autocannon's overallRate is not that: each connection sends back to back until
// its quota for the current second is used, then waits for the next second, so "half load"
// runs at full speed for half of every second (and its latencies are those of full load).
//
// Here requests are due at start + i / rate (checked every millisecond), each goes out on
// an idle keep-alive connection (or waits for one), and its latency counts from when it was
// due, not from when it went out: waiting for a connection is part of it (no coordinated
// omission). The client runs in a worker thread of its own, so it does not share the
// in-process service's event loop. Every answer must be a 200 with the expected body.
// A warm-up pass on the same connections comes first and is not measured: a new worker's
// first requests run its code before the JIT has compiled it (in a 10 s run without it,
// the first 100–600 ms held most of the requests over 5 ms, against the bare ceiling too).
import { connect, type Socket } from 'node:net';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

export interface PacedOptions {
  url: string;
  headers: Record<string, string>;
  expectBody: string;
  /** Requests per second, spread evenly. */
  rate: number;
  seconds: number;
  connections: number;
  /** Paced the same way on the same connections before the measured run, not measured. */
  warmupSeconds: number;
}

export interface PacedReport {
  rate: number;
  /** Requests answered per second of the run. */
  reqPerSec: number;
  requests: number;
  /** From when each request was due to its answer's last byte. */
  latencyMs: { p50: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  mismatches: number;
  /** Requests still unanswered 10 s after the last one was due. */
  unanswered: number;
  /** What went wrong in the warm-up (its latencies are not kept). */
  warmup?: { requests: number; non2xx: number; errors: number; mismatches: number; unanswered: number };
}

/** Runs the paced load in a worker thread; resolves with its report. */
export function pacedLoad(opts: PacedOptions): Promise<PacedReport> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: opts });
    worker.once('message', (r: PacedReport) => resolve(r));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`paced load worker exited with ${code}`));
    });
  });
}

const HEADER_END = Buffer.from('\r\n\r\n');
const DRAIN_MS = 10_000;

/** What one pass (warm-up or measured) counts. */
interface Pass {
  total: number;
  latencies: Float64Array;
  answered: number;
  non2xx: number;
  errors: number;
  mismatches: number;
}

async function run(opts: PacedOptions): Promise<PacedReport> {
  const url = new URL(opts.url);
  const headerLines = Object.entries(opts.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  const request = Buffer.from(`GET ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\n${headerLines}\r\n`, 'latin1');
  const expected = Buffer.from(opts.expectBody, 'utf8');
  const newPass = (seconds: number): Pass => {
    const total = Math.max(1, Math.round(opts.rate * seconds));
    return { total, latencies: new Float64Array(total), answered: 0, non2xx: 0, errors: 0, mismatches: 0 };
  };
  let pass = newPass(0);
  // Due times (ms, performance.now()) of requests not yet sent, oldest first.
  let waiting: number[] = [];
  let waitingAt = 0;

  interface Conn {
    socket: Socket;
    busy: boolean;
    due: number;
    buf: Buffer;
  }
  const idle: Conn[] = [];

  const send = (c: Conn, due: number) => {
    c.busy = true;
    c.due = due;
    c.socket.write(request);
  };
  const next = (c: Conn) => {
    if (waitingAt < waiting.length) send(c, waiting[waitingAt++]!);
    else idle.push(c);
  };
  /** One whole response at the front of c.buf: consumed and recorded; false when more bytes are needed. */
  const consume = (c: Conn): boolean => {
    const end = c.buf.indexOf(HEADER_END);
    if (end < 0) return false;
    const head = c.buf.subarray(0, end).toString('latin1');
    const status = Number(head.slice(9, 12));
    const m = /\r\ncontent-length:[ ]*(\d+)/i.exec(head);
    if (!m) throw new Error('paced load: an answer without Content-Length');
    const bodyStart = end + HEADER_END.length;
    const bodyEnd = bodyStart + Number(m[1]);
    if (c.buf.length < bodyEnd) return false;
    if (status < 200 || status > 299) pass.non2xx++;
    else if (!c.buf.subarray(bodyStart, bodyEnd).equals(expected)) pass.mismatches++;
    if (pass.answered < pass.total) pass.latencies[pass.answered] = performance.now() - c.due;
    pass.answered++;
    c.buf = c.buf.subarray(bodyEnd);
    c.busy = false;
    return true;
  };

  const conns = await Promise.all(
    Array.from(
      { length: opts.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true });
          const c: Conn = { socket, busy: false, due: 0, buf: Buffer.alloc(0) };
          socket.once('connect', () => resolve(c));
          socket.once('error', reject);
        }),
    ),
  );
  for (const c of conns) {
    c.socket.removeAllListeners('error');
    c.socket.on('error', () => pass.errors++);
    c.socket.on('data', (chunk: Buffer) => {
      c.buf = c.buf.length === 0 ? chunk : Buffer.concat([c.buf, chunk]);
      while (c.busy && consume(c)) next(c);
    });
    idle.push(c);
  }

  /** Sends `seconds` of requests at the rate, then waits for their answers; resolves with the pass's time in seconds. */
  const runPass = async (seconds: number): Promise<number> => {
    pass = newPass(seconds);
    waiting = [];
    waitingAt = 0;
    const { total } = pass;
    const start = performance.now();
    let scheduled = 0;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const now = performance.now();
        const dueNow = Math.min(total, Math.floor(((now - start) * opts.rate) / 1000) + 1);
        for (; scheduled < dueNow; scheduled++) {
          const due = start + (scheduled * 1000) / opts.rate;
          const c = idle.pop();
          if (c) send(c, due);
          else waiting.push(due);
        }
        if (scheduled >= total) {
          clearInterval(tick);
          resolve();
        }
      }, 1);
    });
    const lastDue = performance.now();
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (pass.answered >= total || performance.now() - lastDue > DRAIN_MS) {
          clearInterval(check);
          resolve();
        }
      }, 5);
    });
    return (performance.now() - start) / 1000;
  };

  // The warm-up pass is not measured (its first requests meet this thread's code before
  // the JIT has compiled it); what it saw going wrong is still reported.
  let warmup: PacedReport['warmup'];
  if (opts.warmupSeconds > 0) {
    await runPass(opts.warmupSeconds);
    warmup = { requests: pass.answered, non2xx: pass.non2xx, errors: pass.errors, mismatches: pass.mismatches, unanswered: pass.total - Math.min(pass.answered, pass.total) };
    // A pass that left requests unanswered leaves busy connections: those are not reused.
    for (let i = idle.length - 1; i >= 0; i--) if (idle[i]!.busy) idle.splice(i, 1);
  }
  const elapsed = await runPass(opts.seconds);
  for (const c of conns) c.socket.destroy();

  const { total, answered } = pass;
  const done = pass.latencies.subarray(0, Math.min(answered, total)).sort();
  const at = (q: number) => (done.length === 0 ? 0 : done[Math.min(done.length - 1, Math.floor(q * done.length))]!);
  return {
    rate: opts.rate,
    reqPerSec: answered / elapsed,
    requests: answered,
    latencyMs: { p50: at(0.5), p99: at(0.99), max: done.length === 0 ? 0 : done[done.length - 1]! },
    non2xx: pass.non2xx,
    errors: pass.errors,
    mismatches: pass.mismatches,
    unanswered: total - Math.min(answered, total),
    ...(warmup ? { warmup } : {}),
  };
}

if (!isMainThread && parentPort && (workerData as PacedOptions | undefined)?.rate !== undefined) {
  const port = parentPort;
  run(workerData as PacedOptions).then(
    (r) => port.postMessage(r),
    (err: unknown) => {
      throw err;
    },
  );
}
