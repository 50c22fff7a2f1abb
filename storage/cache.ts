// Read-through caches for the hot path, with invalidation that crosses replicas through
// Redis pub/sub when REDIS_URL is set. Only ids, roles and ciphertext are cached here;
// plaintext never enters a cache, in-process or Redis.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';

export type InvalidationHandler = (topic: string, key: string) => void;

export interface CacheBus {
  readonly kind: 'memory' | 'redis';
  /** Applies locally at once, then tells the other replicas. */
  publish(topic: string, key: string): Promise<void>;
  subscribe(handler: InvalidationHandler): void;
  /** Called whenever invalidations may have been missed (reconnect): drop everything. */
  onReset(handler: () => void): void;
  close(): Promise<void>;
}

export function memoryBus(): CacheBus {
  const handlers: InvalidationHandler[] = [];
  return {
    kind: 'memory',
    async publish(topic, key) {
      for (const h of handlers) h(topic, key);
    },
    subscribe: (h) => void handlers.push(h),
    onReset: () => {},
    close: async () => {},
  };
}

/** How long a publisher waits for the other replicas to confirm an invalidation. */
export const ACK_TIMEOUT_MS = 2_000;

export interface RedisBusOptions {
  /**
   * Replicas of one installation share this (the service passes its organization id,
   * which lives in the database): installations sharing a Redis do not hear each other.
   */
  namespace?: string;
  log?: (msg: string) => void;
  ackTimeoutMs?: number;
}

/**
 * Invalidation across replicas. publish() resolves only once every other replica that
 * was subscribed has APPLIED the invalidation (each one answers on the publisher's own
 * acknowledgement channel), so a change that has been answered to its client is in
 * force on every replica's very next request: a role downgrade or a revoked secret
 * cannot slip through on a replica whose pub/sub message is still in flight. A replica
 * that does not answer within ackTimeoutMs (dead, partitioned) is logged and not waited
 * for; when it reconnects it drops all its caches (onReset).
 */
export async function redisBus(url: string, opts: RedisBusOptions = {}): Promise<CacheBus> {
  const { log, ackTimeoutMs = ACK_TIMEOUT_MS } = opts;
  const prefix = `vault-standalone:${opts.namespace ?? 'default'}`;
  const channel = `${prefix}:invalidate`;
  const origin = randomUUID();
  const ackChannel = `${prefix}:ack:${origin}`;
  const handlers: InvalidationHandler[] = [];
  const resets: Array<() => void> = [];
  const waiting = new Map<number, { acks: number; expected: number; done: () => void }>();
  let seq = 0;
  const options = { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true };
  const pub = new Redis(url, options);
  const sub = new Redis(url, options);
  for (const c of [pub, sub]) c.on('error', (err: Error & { code?: string }) => log?.(`redis: ${err.code ?? err.message}`));
  await pub.connect();
  await sub.connect();
  sub.on('message', (from: string, message: string) => {
    if (from === ackChannel) {
      const w = waiting.get(Number(message));
      if (w && ++w.acks >= w.expected) w.done();
      return;
    }
    let msg: { o?: unknown; t?: unknown; k?: unknown; i?: unknown };
    try {
      msg = JSON.parse(message);
    } catch {
      return;
    }
    if (msg.o === origin || typeof msg.o !== 'string' || typeof msg.t !== 'string' || typeof msg.k !== 'string') return;
    for (const h of handlers) h(msg.t, msg.k);
    if (typeof msg.i === 'number') {
      pub.publish(`${prefix}:ack:${msg.o}`, String(msg.i)).catch((err: Error) => log?.(`redis: acknowledgement failed: ${err.message}`));
    }
  });
  // After a reconnect we may have missed messages: every cache starts over.
  let first = true;
  sub.on('ready', () => {
    if (first) return void (first = false);
    for (const r of resets) r();
  });
  await sub.subscribe(channel, ackChannel);
  first = false;
  return {
    kind: 'redis',
    async publish(topic, key) {
      for (const h of handlers) h(topic, key);
      const id = ++seq;
      // Registered before publishing: an acknowledgement may overtake PUBLISH's reply.
      let done!: () => void;
      const confirmed = new Promise<void>((resolve) => (done = resolve));
      const w = { acks: 0, expected: Number.POSITIVE_INFINITY, done };
      waiting.set(id, w);
      try {
        const receivers = await pub.publish(channel, JSON.stringify({ o: origin, t: topic, k: key, i: id }));
        w.expected = receivers - 1; // our own subscriber counts too
        if (w.acks >= w.expected) return;
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), ackTimeoutMs)));
        if (await Promise.race([confirmed.then(() => false), late])) {
          log?.(`redis: ${w.expected - w.acks} of ${w.expected} replicas did not confirm an invalidation within ${ackTimeoutMs} ms`);
        }
        clearTimeout(timer);
      } finally {
        waiting.delete(id);
      }
    },
    subscribe: (h) => void handlers.push(h),
    onReset: (r) => void resets.push(r),
    async close() {
      for (const w of waiting.values()) w.done();
      sub.disconnect();
      pub.disconnect();
    },
  };
}

/**
 * A bounded read-through cache with single-flight loads and a generation counter, so a
 * load that raced an invalidation is never stored (it would otherwise be stale forever).
 * `ttlMs` is a backstop against a lost invalidation, not the consistency mechanism.
 */
export class ReadThroughCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly inflight = new Map<string, Promise<V>>();
  private generation = 0;
  private readonly keyGenerations = new Map<string, number>();

  constructor(
    private readonly maxEntries = 10_000,
    private readonly ttlMs = 60_000,
  ) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.value;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const startGen = this.generation;
    const startKeyGen = this.keyGenerations.get(key) ?? 0;
    const p = load().then(
      (value) => {
        this.inflight.delete(key);
        if (this.generation === startGen && (this.keyGenerations.get(key) ?? 0) === startKeyGen) {
          if (this.entries.size >= this.maxEntries) {
            const oldest = this.entries.keys().next();
            if (!oldest.done) this.entries.delete(oldest.value);
          }
          this.entries.set(key, { value, expires: Date.now() + this.ttlMs });
        }
        return value;
      },
      (err) => {
        this.inflight.delete(key);
        throw err;
      },
    );
    this.inflight.set(key, p);
    return p;
  }

  invalidate(key: string): void {
    this.entries.delete(key);
    this.inflight.delete(key);
    this.keyGenerations.set(key, (this.keyGenerations.get(key) ?? 0) + 1);
    if (this.keyGenerations.size > this.maxEntries * 2) {
      // Keep the generation map bounded; a global bump keeps racing loads from storing.
      this.keyGenerations.clear();
      this.generation++;
    }
  }

  /** Invalidates every key for which `match` holds. */
  invalidateWhere(match: (key: string, value: V) => boolean): void {
    for (const [k, e] of this.entries) if (match(k, e.value)) this.invalidate(k);
    // A load in flight has no value to match yet: none of them may store its result.
    if (this.inflight.size > 0) {
      this.inflight.clear();
      this.generation++;
    }
  }

  clear(): void {
    this.entries.clear();
    this.inflight.clear();
    this.keyGenerations.clear();
    this.generation++;
  }

  get size(): number {
    return this.entries.size;
  }
}
