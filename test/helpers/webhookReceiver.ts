// A webhook receiver over a real socket on a free port: answers each request with the next
// status of its script (then `then`), records what arrived, and lets a test wait for the
// n-th request (a promise, never a sleep).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface Received {
  headers: IncomingHttpHeaders;
  /** The raw body, as the receiver got its bytes. */
  body: string;
  json: any;
  path: string;
}

export class Receiver {
  readonly requests: Received[] = [];
  /** Statuses for the next requests, in order; `then` afterwards. */
  script: number[] = [];
  then = 200;
  private waiters: Array<{ n: number; resolve: (r: Received) => void }> = [];
  private constructor(readonly port: number) {}

  static async start(t: TapLike, script: number[] = [], then = 200): Promise<Receiver> {
    let self: Receiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = self!;
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        const status = r.script.length > 0 ? r.script.shift()! : r.then;
        r.requests.push({ headers: req.headers, body, json, path: req.url ?? '' });
        res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
        const n = r.requests.length - 1;
        for (const w of r.waiters.filter((x) => x.n <= n)) w.resolve(r.requests[w.n]!);
        r.waiters = r.waiters.filter((x) => x.n > n);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }));
    self = new Receiver((server.address() as AddressInfo).port);
    self.script = [...script];
    self.then = then;
    return self;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The n-th request (0-based), once it has arrived. */
  nth(n: number): Promise<Received> {
    if (this.requests.length > n) return Promise.resolve(this.requests[n]!);
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
}

/**
 * What a receiver written for Infisical does (Infisical's docs, "Secret Key
 * Verification"): split `x-infisical-signature: t=<timestamp>;<signature>`, compute the
 * HMAC-SHA256 of the payload with the secret key it knows, compare. Checked both ways
 * receivers do it: over the raw body, and over JSON.stringify of the parsed body (an
 * Express app with express.json()); and the timestamp is the body's.
 */
export function verifiesAsInfisical(r: Received, key: string): boolean {
  const header = r.headers['x-infisical-signature'];
  if (typeof header !== 'string') return false;
  const m = /^t=(\d+);([0-9a-f]{64})$/.exec(header);
  if (!m) return false;
  const given = Buffer.from(m[2]!, 'hex');
  const raw = createHmac('sha256', key).update(r.body).digest();
  const reparsed = createHmac('sha256', key).update(JSON.stringify(JSON.parse(r.body))).digest();
  return timingSafeEqual(given, raw) && timingSafeEqual(given, reparsed) && r.json?.timestamp === Number(m[1]);
}
