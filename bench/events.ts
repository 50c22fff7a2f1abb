// The change events' rows (issue 30): how long from a write's acknowledgement to its event
// at a subscriber (on the other replica on PostgreSQL + Redis; on the same process on the
// embedded default, which admits one), and what 500 idle subscribers and one that never
// reads cost the cached read, against the same read without them, in the same run.
import autocannon from 'autocannon';
import { connect, type Socket } from 'node:net';
import { SYSTEM } from '../server/domain/access.js';
import { seedHomelab, startBenchService, type BenchService } from './service.js';

const SUBSCRIBE = '/api/v1/events/subscribe/project-events';
const ALL = ['secret:create', 'secret:update', 'secret:delete', 'secret:import-mutation'].map((event) => ({ event }));

export interface EventFigures {
  latencyMs: { p50: number; p99: number; max: number; samples: number; where: string };
  read: {
    without: { reqPerSec: number; p99: number };
    with: { reqPerSec: number; p99: number };
    subscribers: number;
    slowDisconnected: boolean;
    eventsDuringRun: number;
    problems: string[];
  };
}

/** An SSE stream on a raw socket: counts events; `next()` resolves at the next one. */
class Stream {
  events = 0;
  closed = false;
  private waiters: Array<() => void> = [];
  private tail = '';
  private constructor(readonly socket: Socket) {}

  static open(port: number, token: string, projectId: string, read: boolean): Promise<Stream> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const s = new Stream(socket);
      const payload = JSON.stringify({ projectId, register: ALL });
      socket.once('error', reject);
      socket.on('close', () => (s.closed = true));
      socket.once('connect', () =>
        socket.write(
          `POST ${SUBSCRIBE} HTTP/1.1\r\nhost: bench\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
            `content-length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
        ),
      );
      let head = '';
      const onHead = (chunk: Buffer) => {
        head += chunk.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        socket.off('data', onHead);
        if (!head.startsWith('HTTP/1.1 200')) return reject(new Error(`subscribe: ${head.slice(0, 40)}`));
        socket.removeAllListeners('error');
        socket.on('error', () => (s.closed = true));
        if (read) socket.on('data', (c: Buffer) => s.take(c.toString('utf8')));
        else socket.pause(); // never reads again
        resolve(s);
      };
      socket.on('data', onHead);
    });
  }

  private take(text: string) {
    const all = this.tail + text;
    const n = all.match(/^id: /gm)?.length ?? 0;
    this.tail = all.slice(all.lastIndexOf('\n') + 1);
    if (n === 0) return;
    this.events += n;
    for (const w of this.waiters.splice(0)) w();
  }

  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  close() {
    this.socket.destroy();
  }
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

async function token(url: string, clientId: string, clientSecret: string): Promise<string> {
  const res = await fetch(`${url}/api/v1/auth/universal-auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId, clientSecret }),
  });
  if (res.status !== 200) throw new Error(`login: ${res.status}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

/**
 * `samples` sequential PATCHes on the writer, each waiting for its event at the subscriber:
 * acknowledged (the answer read) → the event's frame read. Negative would mean the event
 * arrived before the answer was read; it is kept as measured.
 */
async function latency(writer: BenchService, reader: BenchService, auth: string, projectId: string, samples: number): Promise<number[]> {
  const sub = await Stream.open(reader.port, auth, projectId, true);
  try {
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const arrived = sub.next().then(() => performance.now());
      const res = await fetch(`${writer.url}/api/v3/secrets/raw/EVENT_BENCH`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
        body: JSON.stringify({ workspaceId: projectId, environment: 'prod', secretPath: '/events', secretValue: `v${i}` }),
      });
      await res.arrayBuffer();
      const acked = performance.now();
      if (res.status !== 200) throw new Error(`PATCH: ${res.status}`);
      out.push((await arrived) - acked);
    }
    return out;
  } finally {
    sub.close();
  }
}

async function cachedRead(url: string, auth: string, seconds: number, connections: number) {
  const r = await autocannon({
    url: `${url}/api/v3/secrets/raw?environment=prod&include_imports=false&secretPath=%2F&workspaceSlug=homelab`,
    headers: { authorization: `Bearer ${auth}` },
    connections,
    workers: 1,
    timeout: 10,
    duration: seconds,
  });
  return { reqPerSec: r.requests.total / r.duration, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
}

export async function eventRows(
  backend: { adminUrl?: string; redisUrl?: string },
  opts: { seconds: number; connections: number; subscribers: number; samples: number },
): Promise<EventFigures> {
  const extraEnv = { EVENTS_MAX_CONNECTIONS_PER_ACTOR: String(opts.subscribers + 10), EVENTS_MAX_CONNECTIONS: String(opts.subscribers + 100) };
  const A = await startBenchService({ ...backend, extraEnv });
  let B: BenchService | undefined;
  const streams: Stream[] = [];
  try {
    B = backend.adminUrl ? await startBenchService({ extraEnv, replicaOf: A }) : undefined;
    const seeded = await seedHomelab(A.running.services);
    const where = { project: { id: seeded.projectId }, environment: 'prod' };
    await A.running.services.folders.create(SYSTEM, { ...where, parentPath: '/', name: 'events' });
    await A.running.services.secrets.create(SYSTEM, { ...where, secretPath: '/events', key: 'EVENT_BENCH', value: 'v' });
    const auth = await token(A.url, seeded.clientId, seeded.clientSecret);

    const lat = (await latency(A, B ?? A, auth, seeded.projectId, opts.samples)).sort((x, y) => x - y);
    const problems: string[] = [];

    // The cached read without subscribers, then with them; a writer changes another folder
    // every 100 ms in both runs, so events flow to every subscriber while the read is measured.
    const writes = { n: 0, stop: false, failed: 0 };
    const writer = (async () => {
      while (!writes.stop) {
        try {
          await A.running.services.secrets.update(SYSTEM, { ...where, secretPath: '/events', key: 'EVENT_BENCH', value: `w${writes.n++}` });
        } catch {
          writes.failed++;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    let without, withSubs;
    let slowDisconnected = false;
    let before = 0;
    try {
      await cachedRead(A.url, auth, 2, opts.connections); // warm-up
      without = await cachedRead(A.url, auth, opts.seconds, opts.connections);
      for (let i = 0; i < opts.subscribers; i++) streams.push(await Stream.open(A.port, auth, seeded.projectId, true));
      const slow = await Stream.open(A.port, auth, seeded.projectId, false);
      streams.push(slow);
      before = writes.n;
      withSubs = await cachedRead(A.url, auth, opts.seconds, opts.connections);
      slowDisconnected = slow.closed;
    } finally {
      writes.stop = true;
      await writer;
    }
    for (const r of [without, withSubs]) {
      if (r.non2xx > 0 || r.errors > 0) problems.push(`cached read: non-2xx ${r.non2xx}, errors ${r.errors}`);
    }
    if (writes.failed > 0) problems.push(`${writes.failed} background writes failed`);
    const idle = streams.slice(0, -1);
    const behind = idle.filter((s) => s.closed || s.events === 0).length;
    if (behind > 0) problems.push(`${behind} of ${idle.length} idle subscribers got no event or were closed`);
    return {
      latencyMs: {
        p50: quantile(lat, 0.5),
        p99: quantile(lat, 0.99),
        max: lat.at(-1) ?? 0,
        samples: lat.length,
        where: B ? 'write on replica A, event on replica B (PostgreSQL + Redis)' : 'same process (embedded)',
      },
      read: {
        without: { reqPerSec: without.reqPerSec, p99: without.p99 },
        with: { reqPerSec: withSubs.reqPerSec, p99: withSubs.p99 },
        subscribers: opts.subscribers,
        slowDisconnected,
        eventsDuringRun: writes.n - before,
        problems,
      },
    };
  } finally {
    for (const s of streams) s.close();
    if (B) await B.close();
    await A.close();
  }
}
