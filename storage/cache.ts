// Read-through caches for the hot path, with invalidation that crosses replicas through
// Redis pub/sub when REDIS_URL is set. Only ids, roles and ciphertext are cached here;
// plaintext never enters a cache, in-process or Redis.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { certificateRefused, isCertificateError, type RedisTransport } from './tls.js';

export type InvalidationHandler = (topic: string, key: string) => void;

/**
 * What a cache needs to know to fail closed: whether this replica hears every
 * invalidation the others publish right now. A cache bypasses itself while `live` is
 * false and drops every entry stored under an older `epoch`.
 */
export interface InvalidationFeed {
  readonly live: boolean;
  /** Changes whenever `live` does, and when another replica asks everyone to flush. */
  readonly epoch: number;
}

export interface CacheBus extends InvalidationFeed {
  readonly kind: 'memory' | 'redis';
  /**
   * Applies locally at once, then tells the other replicas. Never rejects: the change
   * it announces has been committed already (see redisBus for what a failure means).
   */
  publish(topic: string, key: string): Promise<void>;
  subscribe(handler: InvalidationHandler): void;
  /** Called whenever invalidations may have been missed (link lost, link back, flush asked): drop everything. */
  onReset(handler: () => void): void;
  close(): Promise<void>;
}

export function memoryBus(): CacheBus {
  const handlers: InvalidationHandler[] = [];
  return {
    kind: 'memory',
    live: true,
    epoch: 0,
    async publish(topic, key) {
      for (const h of handlers) h(topic, key);
    },
    subscribe: (h) => void handlers.push(h),
    onReset: () => {},
    close: async () => {},
  };
}

/**
 * The fail-closed bound: a replica whose subscriber has had no confirmed round trip with
 * Redis (a PING sent at most this long ago and answered) stops serving from its caches.
 */
export const STALE_AFTER_MS = 1_000;
/** How often the subscriber PINGs Redis (a hung Redis or a silent partition closes nothing). */
export const HEARTBEAT_MS = 250;
/**
 * How long a publisher waits for Redis, and then for the other replicas, to confirm an
 * invalidation; and the least time a write whose invalidation could not be confirmed waits
 * before it is answered. Longer than STALE_AFTER_MS: by then every replica that did not
 * hear it has stopped serving from its caches.
 */
export const ACK_TIMEOUT_MS = 1_500;
/** A subscriber whose PING has gone unanswered this long is reconnected. */
export const RECONNECT_HUNG_AFTER_MS = 10_000;

export interface RedisBusOptions {
  /**
   * Replicas of one installation share this (the service passes its organization id,
   * which lives in the database): installations sharing a Redis do not hear each other.
   */
  namespace?: string;
  log?: (msg: string) => void;
  ackTimeoutMs?: number;
  heartbeatMs?: number;
  /** Default STALE_AFTER_MS, and always less than ackTimeoutMs. */
  staleAfterMs?: number;
  /** How long start-up waits (with backoff) for an unreachable Redis. */
  waitMs?: number;
  /** TLS (rediss://, with REDIS_CA_FILE) and the password given apart from the URL: tls.ts's redisTransport. */
  transport?: RedisTransport;
}

type Message = { o?: unknown; t?: unknown; k?: unknown; i?: unknown; flush?: unknown };

/**
 * Invalidation across replicas. publish() resolves only once every other replica that
 * was subscribed has APPLIED the invalidation (each one answers on the publisher's own
 * acknowledgement channel), so a change that has been answered to its client is in
 * force on every replica's very next request: a role downgrade or a revoked secret
 * cannot slip through on a replica whose pub/sub message is still in flight. A replica
 * that does not answer within ackTimeoutMs (dead, partitioned) is logged and not waited
 * for.
 *
 * Fail closed: while this replica's subscriber is not connected and subscribed, `live`
 * is false and every cache bound to the bus is flushed and bypassed (reads go to the
 * database); when it is subscribed again, caches are flushed once more and resume. So
 * a change committed while Redis is unreachable is never served stale by a replica
 * that cannot hear about it.
 *
 * A publish that cannot reach Redis (down, hung) is logged and resolves: the change is
 * committed and the replicas that lost Redis too are not caching. What remains is a
 * partition that cuts off only the publisher: replicas still linked to Redis may serve
 * their cached entry until its TTL, or until the publisher reaches Redis again and asks
 * every replica to flush (whichever comes first).
 */
export async function redisBus(url: string, opts: RedisBusOptions = {}): Promise<CacheBus> {
  const { log, ackTimeoutMs = ACK_TIMEOUT_MS } = opts;
  const staleAfterMs = Math.min(opts.staleAfterMs ?? STALE_AFTER_MS, Math.floor((ackTimeoutMs * 2) / 3));
  // Several PINGs fit in the bound, so a healthy link never looks stale.
  const heartbeatMs = Math.min(opts.heartbeatMs ?? HEARTBEAT_MS, Math.max(10, Math.floor(staleAfterMs / 4)));
  const prefix = `vault-standalone:${opts.namespace ?? 'default'}`;
  const channel = `${prefix}:invalidate`;
  const origin = randomUUID();
  const ackChannel = `${prefix}:ack:${origin}`;
  const handlers: InvalidationHandler[] = [];
  const resets: Array<() => void> = [];
  const waiting = new Map<number, { acks: number; expected: number; done: () => void }>();
  let seq = 0;
  let starting = true;
  let closed = false;
  const options = {
    lazyConnect: true,
    // No queueing and no retries of a command: a command that cannot be sent fails at
    // once instead of holding a request while Redis is away.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    // The subscription is renewed by hand on 'ready', so that `live` turns true only once
    // SUBSCRIBE has been answered.
    autoResubscribe: false,
    // During start-up the wait loop below retries; afterwards ioredis reconnects forever.
    retryStrategy: (times: number) => (starting ? null : Math.min(times * 100, 2_000)),
    ...(opts.transport?.tls ? { tls: opts.transport.tls } : {}),
    ...(opts.transport?.password !== undefined ? { password: opts.transport.password } : {}),
  };
  // The publisher sends only PUBLISH: a commit group's invalidations (one per revoked
  // token) and acknowledgements issued in one turn of the event loop go out in one write.
  const pub = new Redis(url, { ...options, enableAutoPipelining: true });
  const sub = new Redis(url, options);
  let lastError: unknown = new Error('no answer');
  for (const c of [pub, sub]) c.on('error', (err: Error) => void (lastError = err));
  const connectAndSubscribe = async () => {
    for (const c of [pub, sub]) if (c.status !== 'ready') await c.connect();
    await sub.subscribe(channel, ackChannel);
  };

  // Subscribed on the current connection, and when the last PING answered on it was sent.
  let linked = false;
  let confirmedAt = -Infinity;
  const fresh = () => performance.now() - confirmedAt <= staleAfterMs;
  const bus = {
    kind: 'redis' as const,
    /**
     * Every invalidation published more than staleAfterMs ago has reached this replica:
     * the subscriber is subscribed and a PING sent since then was answered on it (Redis
     * answers in order, so it delivered everything it published before that PING).
     */
    get live() {
      return linked && fresh();
    },
    epoch: 0,
    subscribe: (h: InvalidationHandler) => void handlers.push(h),
    onReset: (r: () => void) => void resets.push(r),
    publish,
    close,
  };

  function resetAll() {
    bus.epoch++;
    for (const r of resets) r();
  }

  // --- the subscriber: `live` follows it ---
  let connection = 0; // bumped on every close, so an answer from an older connection is ignored
  function linkLost(reason: string) {
    connection++;
    pingSentAt = undefined;
    if (!linked) return;
    linked = false;
    resetAll();
    if (!closed) log?.(`redis: invalidation link lost (${reason}); caches bypassed until it is back`);
  }
  /** A round trip on the subscriber that began at `sentAt` completed. */
  function confirmed(sentAt: number) {
    const wasLive = bus.live;
    if (sentAt > confirmedAt) confirmedAt = sentAt;
    if (!wasLive && bus.live) {
      // Invalidations may have been withheld meanwhile: forget everything cached before.
      resetAll();
      log?.('redis: answering again; caches flushed and in use again');
    }
  }
  sub.on('close', () => linkLost('connection closed'));
  sub.on('end', () => linkLost('connection closed'));
  sub.on('ready', () => {
    if (starting || closed) return;
    const mine = connection;
    const sentAt = performance.now();
    sub.subscribe(channel, ackChannel).then(
      () => {
        if (mine !== connection || closed) return;
        linked = true;
        confirmedAt = sentAt;
        resetAll();
        log?.('redis: invalidation link back; caches flushed and in use again');
      },
      () => {}, // the connection dropped again: 'close' follows
    );
  });
  sub.on('message', (from: string, message: string) => {
    if (from === ackChannel) {
      const w = waiting.get(Number(message));
      if (w && ++w.acks >= w.expected) w.done();
      return;
    }
    let msg: Message;
    try {
      msg = JSON.parse(message);
    } catch {
      return;
    }
    if (msg.o === origin || typeof msg.o !== 'string') return;
    if (msg.flush === true) return resetAll();
    if (typeof msg.t !== 'string' || typeof msg.k !== 'string') return;
    for (const h of handlers) h(msg.t, msg.k);
    if (typeof msg.i === 'number') {
      pub.publish(`${prefix}:ack:${msg.o}`, String(msg.i)).catch((err: Error) => log?.(`redis: acknowledgement failed: ${describe(err)}`));
    }
  });

  // --- the publisher: invalidations that could not be sent become one flush request ---
  let unsent = 0;
  let flushing: Promise<void> | undefined;
  function sendFlush(): Promise<void> {
    if (flushing) return flushing;
    if (unsent === 0 || pub.status !== 'ready' || closed) return Promise.resolve();
    const attempt = (async () => {
      try {
        // Invalidations skipped while a flush was in flight need a flush sent after them.
        while (unsent > 0 && pub.status === 'ready' && !closed) {
          const count = unsent;
          await within(ackTimeoutMs, pub.publish(channel, JSON.stringify({ o: origin, flush: true })));
          unsent -= count;
          log?.(`redis: reachable again; asked every replica to flush its caches (${count} invalidation(s) could not be sent)`);
        }
      } catch {
        // Still unreachable: the next reconnect or heartbeat tries again.
      }
    })();
    flushing = attempt.finally(() => (flushing = undefined));
    return flushing;
  }
  pub.on('ready', () => void (!starting && sendFlush()));

  function notSent(reason: string) {
    if (unsent++ === 0) {
      log?.(`redis: could not send an invalidation to the other replicas (${reason}); the change stands, they are asked to flush when Redis is reachable`);
    }
  }

  /**
   * An invalidation that could not be confirmed: it joins the flush sent when Redis answers,
   * and the write is answered no sooner than ackTimeoutMs after it began, when every
   * replica that could not hear it has stopped serving from its caches (staleAfterMs).
   */
  async function unconfirmed(started: number, reason: string) {
    notSent(reason);
    const wait = ackTimeoutMs - (performance.now() - started);
    if (wait > 0 && !closed) await new Promise((r) => setTimeout(r, wait));
  }

  async function publish(topic: string, key: string) {
    for (const h of handlers) h(topic, key);
    if (closed) return;
    const started = performance.now();
    // Earlier invalidations wait to be sent: the flush that stands for them goes first
    // (at once if Redis answers), then this one is sent and confirmed as usual.
    if (unsent > 0) await sendFlush();
    if (unsent > 0 || pub.status !== 'ready') return unconfirmed(started, pub.status === 'ready' ? 'earlier ones pending' : 'not connected');
    const id = ++seq;
    // Registered before publishing: an acknowledgement may overtake PUBLISH's reply.
    let done!: () => void;
    const confirmed = new Promise<void>((resolve) => (done = resolve));
    const w = { acks: 0, expected: Number.POSITIVE_INFINITY, done };
    waiting.set(id, w);
    try {
      let receivers: number;
      try {
        receivers = await within(ackTimeoutMs, pub.publish(channel, JSON.stringify({ o: origin, t: topic, k: key, i: id })));
      } catch (err) {
        return await unconfirmed(started, describe(err));
      }
      w.expected = receivers - (linked ? 1 : 0); // our own subscriber counts too, when subscribed
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
  }

  // --- heartbeat: a hung Redis or a silent partition closes no socket ---
  // One PING in flight at a time; its answer confirms the link (see `live`). A PING
  // unanswered for RECONNECT_HUNG_AFTER_MS gets the subscriber reconnected.
  let pingSentAt: number | undefined;
  let wasLive = true;
  const heartbeat = setInterval(() => {
    if (linked && !closed) {
      const now = performance.now();
      if (pingSentAt === undefined) {
        const mine = connection;
        const sentAt = (pingSentAt = now);
        sub.ping().then(
          () => {
            if (mine !== connection || closed) return;
            pingSentAt = undefined;
            confirmed(sentAt);
          },
          () => {}, // the connection dropped: 'close' follows
        );
      } else if (now - pingSentAt > RECONNECT_HUNG_AFTER_MS) {
        linkLost(`no answer within ${RECONNECT_HUNG_AFTER_MS} ms`);
        sub.disconnect(true);
      }
      // Tell the caches (and the log) as soon as the bound is passed.
      const live = bus.live;
      if (wasLive && !live && linked) {
        resetAll();
        log?.(`redis: no answer within ${staleAfterMs} ms; caches bypassed until Redis answers`);
      }
      wasLive = live;
    }
    // Invalidations that could not be sent are retried as soon as Redis answers.
    void sendFlush();
  }, heartbeatMs);
  heartbeat.unref();

  async function close() {
    closed = true;
    clearInterval(heartbeat);
    for (const w of waiting.values()) w.done();
    sub.disconnect();
    pub.disconnect();
  }

  try {
    await waitForRedis(connectAndSubscribe, opts.waitMs ?? 0, () => lastError, log);
  } catch (err) {
    await close();
    throw err;
  }
  starting = false;
  linked = true;
  confirmedAt = performance.now();
  return bus;
}

/**
 * Connects with capped exponential backoff like waitForDatabase, so a first start while
 * Redis is still coming up (it starts beside the service) waits instead of crash-looping.
 */
async function waitForRedis(attempt: () => Promise<void>, waitMs: number, lastError: () => unknown, log?: (msg: string) => void): Promise<void> {
  const deadline = Date.now() + waitMs;
  let delay = 250;
  for (;;) {
    try {
      await attempt();
      return;
    } catch {
      const err = lastError();
      // A refused certificate is the configuration's: waiting cannot fix it.
      if (isCertificateError(err)) throw new Error(certificateRefused('redis', err));
      if (Date.now() + delay > deadline) {
        throw new Error(`redis unreachable after ${Math.round(waitMs / 1000)} s: ${describe(err)}`);
      }
      log?.(`redis not reachable yet (${describe(err)}); retrying in ${delay} ms`);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 5_000);
    }
  }
}

function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** An error's code or message: never a value (Redis errors carry no secret data, but stay terse). */
function describe(err: unknown): string {
  const e = err as { code?: string; message?: string };
  return e.code ?? e.message ?? 'unknown error';
}

/**
 * An estimate of what `value` holds on the heap, in bytes: V8's object and string headers
 * as measured on Node 20 (an object ~16 B plus 8 B a property, a string ~16 B plus its
 * characters, a Buffer ~100 B plus its bytes). Walks at most `MAX_ESTIMATE_NODES` nodes
 * (a folder snapshot of 2,000 secrets is ~30,000); beyond that, the rest is counted at the
 * average of what was walked. An estimate, not a measurement: the bounds it enforces are
 * documented as such.
 */
export function estimateBytes(value: unknown): number {
  let nodes = 0;
  let bytes = 0;
  const stack: unknown[] = [value];
  const seen = new Set<object>();
  let unwalked = 0;
  while (stack.length > 0) {
    const v = stack.pop();
    if (nodes >= MAX_ESTIMATE_NODES) {
      unwalked++;
      continue;
    }
    nodes++;
    switch (typeof v) {
      case 'string':
        bytes += 16 + v.length * (/[^\u0000-\u00ff]/.test(v) ? 2 : 1);
        continue;
      case 'number':
      case 'bigint':
        bytes += 16;
        continue;
      case 'boolean':
      case 'undefined':
        bytes += 8;
        continue;
      case 'object':
        break;
      default:
        bytes += 32;
        continue;
    }
    if (v === null) {
      bytes += 8;
      continue;
    }
    if (seen.has(v)) {
      bytes += 8;
      continue;
    }
    seen.add(v);
    if (ArrayBuffer.isView(v)) {
      bytes += 100 + v.byteLength;
    } else if (v instanceof Date) {
      bytes += 32;
    } else if (v instanceof Map) {
      bytes += 32 + v.size * 24;
      for (const [k, e] of v) stack.push(k, e);
    } else if (v instanceof Set) {
      bytes += 32 + v.size * 16;
      for (const e of v) stack.push(e);
    } else if (Array.isArray(v)) {
      bytes += 16 + v.length * 8;
      for (const e of v) stack.push(e);
    } else {
      const keys = Object.keys(v);
      bytes += 16 + keys.length * 8;
      for (const k of keys) stack.push((v as Record<string, unknown>)[k]);
    }
  }
  return Math.ceil(unwalked > 0 ? bytes + (bytes / nodes) * unwalked : bytes);
}
export const MAX_ESTIMATE_NODES = 200_000;

export interface CacheBounds {
  /** Entries held at most. */
  maxEntries?: number;
  /** Estimated bytes held at most (keys and values); the least recently used leave first. */
  maxBytes?: number;
  /** The estimate of one entry's bytes (default: estimateBytes of the value, plus the key). */
  sizeOf?: (key: string, value: unknown) => number;
}

/** What an entry costs besides its value: the key, the Map slot and the entry record. */
const ENTRY_OVERHEAD = 80;

/**
 * A bounded read-through cache with single-flight loads and a generation counter, so a
 * load that raced an invalidation is never stored (it would otherwise be stale forever).
 * `ttlMs` is a backstop against a lost invalidation, not the consistency mechanism.
 * With a `feed` (the bus), it fails closed: while the feed is not live every get loads
 * afresh and nothing is stored, and entries from an older epoch are never served.
 */
export class ReadThroughCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number; bytes: number }>();
  /** The estimated bytes of the entries held (see estimateBytes): never above maxBytes. */
  private heldBytes = 0;
  private readonly maxEntries: number;
  readonly maxBytes: number;
  private readonly sizeOf: (key: string, value: unknown) => number;
  private readonly inflight = new Map<string, Promise<V>>();
  private generation = 0;
  /** Per key, bumped by an invalidation while a load of it runs; dropped when none runs. */
  private readonly keyGenerations = new Map<string, number>();
  /** Loads running per key (only their keys need a generation). */
  private readonly running = new Map<string, number>();

  private epoch: number;

  /** Since start, for metrics: answered from the cache (or a load already in flight), loaded, or bypassed (bus not live). */
  readonly counts = { hits: 0, misses: 0, bypassed: 0, evicted: 0, tooLarge: 0 };

  /** `bounds`: a number is the entry bound alone (no byte bound). */
  constructor(
    bounds: number | CacheBounds = 10_000,
    private readonly ttlMs = 60_000,
    private readonly feed?: InvalidationFeed,
    /** Values for which this is false are returned but never stored (a revoked token's null). */
    private readonly keep?: (value: V) => boolean,
  ) {
    const b = typeof bounds === 'number' ? { maxEntries: bounds } : bounds;
    this.maxEntries = b.maxEntries ?? 10_000;
    this.maxBytes = b.maxBytes ?? Number.POSITIVE_INFINITY;
    this.sizeOf = b.sizeOf ?? ((key, value) => ENTRY_OVERHEAD + key.length + estimateBytes(value));
    this.epoch = feed?.epoch ?? 0;
  }

  /** Drops `key`'s entry, keeping the byte count. */
  private drop(key: string): boolean {
    const e = this.entries.get(key);
    if (e === undefined) return false;
    this.entries.delete(key);
    this.heldBytes -= e.bytes;
    return true;
  }

  /** Moves a hit to the end: eviction takes the least recently used. */
  private touch(key: string, e: { value: V; expires: number; bytes: number }): void {
    this.entries.delete(key);
    this.entries.set(key, e);
  }

  /** Drops the entries whose time is up (get() would reload them anyway); returns how many. */
  sweep(now = Date.now()): number {
    let n = 0;
    for (const [k, e] of this.entries) {
      if (e.expires <= now) {
        this.drop(k);
        n++;
      }
    }
    return n;
  }

  /**
   * The value held for `key` now, without a promise: undefined when none is held (or the
   * link is down, or dropped since this cache last looked): then get() decides. The hot
   * path asks this first; a cached request so allocates no promise and no loader per cache.
   */
  peek(key: string): V | undefined {
    if (this.feed && (!this.feed.live || this.feed.epoch !== this.epoch)) return undefined;
    const hit = this.entries.get(key);
    if (hit === undefined || hit.expires <= Date.now()) return undefined;
    this.counts.hits++;
    this.touch(key, hit);
    return hit.value;
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    if (this.feed) {
      // Not shared with other callers either: a load started before a change committed
      // must not answer a request that came after it.
      if (!this.feed.live) {
        this.counts.bypassed++;
        return load();
      }
      if (this.feed.epoch !== this.epoch) {
        this.clear();
        this.epoch = this.feed.epoch;
      }
    }
    const hit = this.entries.get(key);
    if (hit && hit.expires > Date.now()) {
      this.counts.hits++;
      this.touch(key, hit);
      return hit.value;
    }
    const pending = this.inflight.get(key);
    if (pending) {
      this.counts.hits++;
      return pending;
    }
    this.counts.misses++;
    const startGen = this.generation;
    const startKeyGen = this.keyGenerations.get(key) ?? 0;
    this.running.set(key, (this.running.get(key) ?? 0) + 1);
    const settled = () => {
      const n = (this.running.get(key) ?? 1) - 1;
      if (n > 0) {
        this.running.set(key, n);
      } else {
        // No load of this key left to protect: its generation is not needed any more.
        this.running.delete(key);
        this.keyGenerations.delete(key);
      }
    };
    let loading: Promise<V>;
    try {
      loading = load();
    } catch (err) {
      settled();
      throw err;
    }
    const p = loading.then(
      (value) => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
        const store =
          this.generation === startGen &&
          (this.keyGenerations.get(key) ?? 0) === startKeyGen &&
          this.feedUnchanged() &&
          (this.keep === undefined || this.keep(value));
        settled();
        if (store) this.store(key, value);
        return value;
      },
      (err) => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
        settled();
        throw err;
      },
    );
    this.inflight.set(key, p);
    return p;
  }

  /**
   * Stores at the end (most recently used), evicting from the front (least recently used)
   * while the entry or byte bound would be passed. An entry larger than the whole byte
   * bound is not stored (it is answered, and loaded again next time).
   */
  private store(key: string, value: V): void {
    this.drop(key);
    const bytes = this.sizeOf(key, value);
    if (bytes > this.maxBytes) {
      this.counts.tooLarge++;
      return;
    }
    while (this.entries.size > 0 && (this.entries.size >= this.maxEntries || this.heldBytes + bytes > this.maxBytes)) {
      this.drop(this.entries.keys().next().value!);
      this.counts.evicted++;
    }
    this.entries.set(key, { value, expires: Date.now() + this.ttlMs, bytes });
    this.heldBytes += bytes;
  }

  /** The link did not drop (or come back) since this cache last looked. */
  private feedUnchanged(): boolean {
    return !this.feed || (this.feed.live && this.feed.epoch === this.epoch);
  }

  invalidate(key: string): void {
    this.drop(key);
    this.inflight.delete(key);
    // Only a load running now could store what this invalidates; later ones load afresh.
    if (this.running.has(key)) this.keyGenerations.set(key, (this.keyGenerations.get(key) ?? 0) + 1);
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
    this.heldBytes = 0;
    this.inflight.clear();
    this.keyGenerations.clear();
    this.generation++;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The estimated bytes held (keys and values): never above maxBytes (vaultstandalone_cache_bytes). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Keys with a generation held (bounded by the loads running): for the memory tests. */
  get trackedKeys(): number {
    return this.keyGenerations.size;
  }
}
