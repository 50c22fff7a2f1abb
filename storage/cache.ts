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

const CHANNEL = 'vault-standalone:invalidate';

export async function redisBus(url: string, log?: (msg: string) => void): Promise<CacheBus> {
  const origin = randomUUID();
  const handlers: InvalidationHandler[] = [];
  const resets: Array<() => void> = [];
  const options = { lazyConnect: true, maxRetriesPerRequest: 2, enableOfflineQueue: true };
  const pub = new Redis(url, options);
  const sub = new Redis(url, options);
  for (const c of [pub, sub]) c.on('error', (err: Error & { code?: string }) => log?.(`redis: ${err.code ?? err.message}`));
  await pub.connect();
  await sub.connect();
  sub.on('message', (_channel: string, message: string) => {
    let msg: { o?: string; t?: string; k?: string };
    try {
      msg = JSON.parse(message);
    } catch {
      return;
    }
    if (msg.o === origin || typeof msg.t !== 'string' || typeof msg.k !== 'string') return;
    for (const h of handlers) h(msg.t, msg.k);
  });
  // After a reconnect we may have missed messages: every cache starts over.
  let first = true;
  sub.on('ready', () => {
    if (first) return void (first = false);
    for (const r of resets) r();
  });
  await sub.subscribe(CHANNEL);
  first = false;
  return {
    kind: 'redis',
    async publish(topic, key) {
      for (const h of handlers) h(topic, key);
      await pub.publish(CHANNEL, JSON.stringify({ o: origin, t: topic, k: key }));
    },
    subscribe: (h) => void handlers.push(h),
    onReset: (r) => void resets.push(r),
    async close() {
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
