// The main-thread face of crypto/: the only module other layers import. It holds
// no key material: start-up moves the key bytes into the pool's workers and keeps
// no copy, so a worker lost later cannot be replaced (see README.md).
import { availableParallelism } from 'node:os';
import { BroadcastChannel, MessageChannel, type MessagePort } from 'node:worker_threads';
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import { Piscina } from 'piscina';
import { ENCRYPTION_KEY_BYTES, isValidEncryptionKey, ProviderConfigError } from './keyProvider.js';
import { createPkcs11RootKey, type Pkcs11Settings } from './pkcs11.js';
import type { ProviderKind, RootKeyConfig } from './providers.js';
import { RENDER_CHANNEL, type ErrorCode, type Failure, type Results, type Task } from './worker.js';

export { headerOf, type BlobHeader } from './blob.js';
export type { KeyProvider } from './keyProvider.js';
export { isValidEncryptionKey, ProviderConfigError, type Pkcs11Settings, type ProviderKind };
export { PROVIDERS } from './providers.js';

/**
 * One root key version and who holds it. `pin` is zeroed by createCrypto once copied
 * into the workers' init buffers (pass a copy if you need it again).
 */
export type RootKeySpec =
  | { provider: 'local'; version: number; keyHex: string }
  | ({ provider: 'pkcs11'; version: number; pin: Uint8Array } & Pkcs11Settings);

/**
 * `vault-standalone hsm-init`: creates the AES-256 root key in the token when missing;
 * never replaces one. Zeroes `pin`. Throws ProviderConfigError naming the setting.
 */
export function initPkcs11RootKey(settings: Pkcs11Settings, pin: Uint8Array): { created: boolean; tokenLabel: string } {
  try {
    return createPkcs11RootKey(settings, pin);
  } finally {
    pin.fill(0);
  }
}

export interface CryptoOptions {
  /** The local provider's current key. Either this (with previousKeys) or rootKeys. */
  encryptionKeyHex?: string;
  /** Every root key version, the current one first (any provider). Replaces the three options above and below. */
  rootKeys?: RootKeySpec[];
  /** Version of encryptionKeyHex; new wraps use it. Default 1. */
  rootKeyVersion?: number;
  /** Older root keys, still loaded so their wrapped keys can be unwrapped and rewrapped. */
  previousKeys?: Array<{ version: number; keyHex: string }>;
  /** Default max(1, availableParallelism() - 1). */
  threads?: number;
  /**
   * Called once if a worker stops after start-up. Its keys cannot be handed to a
   * replacement (the main thread no longer has them), so from then on every call
   * fails with KEY_UNAVAILABLE: the process should exit and be started again.
   */
  onFatal?: () => void;
  /** Each worker's cache of rendered answers, in bytes (RENDER_CACHE_MAX_BYTES; default 32 MiB; 0: none kept). */
  renderCacheMaxBytes?: number;
  /** Called after each worker task with its operation and its time from submission to answer (queue wait included), for metrics. */
  onTask?: (op: string, seconds: number) => void;
}

/** The pool's state right now, for metrics: never a key, a value or an aad. */
export interface CryptoPoolStats {
  /** Tasks waiting for a free worker. */
  queueSize: number;
  threads: number;
  /**
   * Worker time spent running tasks since start, in seconds (piscina's mean run time ×
   * tasks run: its utilization × elapsed time × threads). Only grows, up to rounding of
   * the mean: a counter's rate over threads is the utilization over any window.
   */
  busySeconds: number;
  /** Bytes the workers' rendered-answer caches hold, all workers together (each bounded by RENDER_CACHE_MAX_BYTES). */
  renderCacheBytes: number;
}

export type CryptoErrorCode = ErrorCode;

/** A rendered answer: its bytes, or refused (a plaintext held the caller's `refuseIf`). */
export type Rendered = { bytes: Buffer; refused?: undefined } | { bytes?: undefined; refused: true };

// Fixed texts: a message must never echo a plaintext, an aad or a key.
const MESSAGES: Record<CryptoErrorCode, string> = {
  OPEN_FAILED: 'a sealed value could not be opened',
  UNWRAP_FAILED: 'a data key could not be unwrapped (is ENCRYPTION_KEY the key the data was written with?)',
  BAD_TASK: 'malformed crypto request',
  KEY_UNAVAILABLE: 'crypto keys are unavailable',
};

export class CryptoError extends Error {
  override readonly name = 'CryptoError';
  readonly code: CryptoErrorCode;
  /** For OPEN_FAILED from openMany: the position of the first item that failed. */
  readonly index: number | undefined;

  /** `reason`: start-up only, the provider's one line naming the setting to fix (never a secret). */
  constructor(code: CryptoErrorCode, index?: number, options?: ErrorOptions, reason?: string) {
    super(reason ?? MESSAGES[code], options);
    this.code = code;
    this.index = index;
  }
}

/**
 * A render's segments joined into one string, with where each one ends (`ends[i]` is the
 * end of segment i; the last is `text.length`). What a large answer's shaper builds: one
 * flat string is cloned to the worker as it is, where 10,000 small ones are joined first.
 */
export interface FixedText {
  text: string;
  ends: Uint32Array;
}
/** A render's fixed text: its segments, or the same joined (FixedText). */
export type Segments = string[] | FixedText;

/**
 * A render's items packed by the caller: the blobs concatenated and their associated data
 * as UTF-8 bytes concatenated, with where each one ends. What a large folder's read builds
 * straight from its rows (10,000 AAD strings joined cost the main thread more than the
 * bytes written once); the worker opens each blob with its AAD as bytes.
 */
export interface PackedItems {
  blobs: Uint8Array;
  blobEnds: Uint32Array;
  aads: Uint8Array;
  aadEnds: Uint32Array;
}
/** A render's items: listed, or packed (PackedItems). */
export type RenderItems = Array<{ blob: Buffer | Uint8Array; aad: string }> | PackedItems;

export interface Crypto {
  /** A fresh random 256-bit data key, returned only wrapped under the current root key. */
  generateDataKey(keyAad: string): Promise<Buffer>;
  sealMany(wrappedKey: Buffer, keyAad: string, items: Array<{ plaintext: string; aad: string }>): Promise<Buffer[]>;
  /** One worker task for all items. Throws CryptoError OPEN_FAILED (with index) or UNWRAP_FAILED. */
  openMany(wrappedKey: Buffer, keyAad: string, items: Array<{ blob: Buffer | Uint8Array; aad: string }>): Promise<string[]>;
  /**
   * Opens `items` in one task and returns `segments[0] item[0] segments[1] … segments[n]`
   * as UTF-8 bytes, each plaintext written as a JSON string literal; the worker keeps the
   * bytes under `cacheKey` (which must name an exact version of every input: the caller
   * never reuses one for other content). `refused`: a plaintext contains `refuseIf`, and
   * nothing was rendered. Errors as openMany.
   * `segments` as a function: called once the task is on its way, so the worker opens the
   * values while the caller shapes the fixed text (what it throws, render throws). Either
   * form may give the segments already joined (FixedText).
   * `items` as an async iterable of packed parts: each is sent to the worker as it comes
   * (opened there while the caller produces the next), and `segments` is asked for once
   * the last has come. What the iterable throws, render throws.
   */
  render(
    wrappedKey: Buffer,
    keyAad: string,
    cacheKey: string,
    segments: Segments | (() => Segments),
    items: RenderItems | AsyncIterable<PackedItems>,
    refuseIf?: string,
  ): Promise<Rendered>;
  /** What a worker holds under `cacheKey` (a task to any one worker): undefined when it holds nothing. */
  rendered(cacheKey: string): Promise<Rendered | undefined>;
  /** Every worker drops the rendered entries whose key starts with `prefix` ('' = all); asynchronous, best effort (keys are never reused anyway). */
  forgetRendered(prefix: string): void;
  /** HMAC-SHA-256 under a subkey of the data key: deterministic, for high-entropy secrets only. */
  mac(wrappedKey: Buffer, keyAad: string, message: string): Promise<Buffer>;
  /** The MACs of several messages under the same key, in one worker task. */
  macMany(wrappedKey: Buffer, keyAad: string, messages: string[]): Promise<Buffer[]>;
  /**
   * A chain of MACs in one worker task: link n's message is before + hex(prev) + after,
   * prev being link n-1's MAC (`start` for the first); `final` gets the last link's prev;
   * `extra` are plain messages. Same MACs as macMany one link at a time.
   */
  macChain(
    wrappedKey: Buffer,
    keyAad: string,
    chain: { start: Buffer; links: Array<[string, string]>; final: [string, string]; extra: string[] },
  ): Promise<{ links: Buffer[]; final: Buffer; extra: Buffer[] }>;
  /** Re-wraps a data key under root key `toVersion` (which must be loaded). */
  rewrap(wrapped: Buffer, keyAad: string, toVersion: number): Promise<Buffer>;
  hashPassword(password: string): Promise<string>;
  /** False on a wrong password and on a malformed or non-argon2id hash; never throws. */
  verifyPassword(hash: string, password: string): Promise<boolean>;
  readonly rootKeyVersion: number;
  poolStats(): CryptoPoolStats;
  /** Every worker is keyed and none was lost (false once closed or failed): for the readiness probe. */
  readonly alive: boolean;
  /** Who holds the current root key. */
  readonly rootKeyProvider: ProviderKind;
  close(): Promise<void>;
}

// OWASP's argon2id minimum (m=19 MiB, t=2, p=1). Runs on libuv's thread pool, not
// the event loop and not the crypto workers.
const ARGON2: { algorithm: Algorithm; memoryCost: number; timeCost: number; parallelism: number } = {
  algorithm: 2 as Algorithm, // Algorithm.Argon2id; a const enum, not importable under verbatimModuleSyntax
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1,
};

const isVersion = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 0xffffffff;

export async function createCrypto(opts: CryptoOptions): Promise<Crypto> {
  const specs: RootKeySpec[] =
    opts.rootKeys ??
    [
      { provider: 'local' as const, version: opts.rootKeyVersion ?? 1, keyHex: opts.encryptionKeyHex as string },
      ...(opts.previousKeys ?? []).map((k) => ({ provider: 'local' as const, version: k.version, keyHex: k.keyHex })),
    ];
  const pins = specs.flatMap((k) => (k.provider === 'pkcs11' && k.pin instanceof Uint8Array ? [k.pin] : []));
  const copies: Uint8Array[] = [];
  try {
    const distinct = new Set(specs.map((k) => k.version)).size === specs.length;
    if (specs.length === 0 || !distinct || !specs.every(validSpec)) throw new CryptoError('KEY_UNAVAILABLE');
    const threads = Math.max(1, Math.floor(opts.threads ?? availableParallelism() - 1) || 1);
    // One copy of the secrets per worker: each is moved into its worker and leaves a
    // detached, empty buffer behind.
    const { roots, length } = layout(specs);
    for (let i = 0; i < threads; i++) copies.push(secretBytes(specs, length));
    for (const pin of pins) pin.fill(0);

    const crypto = new PooledCrypto(new Piscina(poolOptions(threads)), specs[0]!.version, specs[0]!.provider, opts.onFatal, opts.onTask, threads, opts.renderCacheMaxBytes);
    try {
      await crypto.handOver(copies, roots);
    } catch (err) {
      await crypto.abort();
      throw err;
    }
    return crypto;
  } finally {
    for (const pin of pins) pin.fill(0);
    // A copy not moved (start-up failed before its task was sent) is zeroed here.
    for (const c of copies) if (c.buffer.byteLength !== 0) c.fill(0);
  }
}

function validSpec(k: RootKeySpec): boolean {
  if (!isVersion(k.version)) return false;
  if (k.provider === 'local') return isValidEncryptionKey(k.keyHex);
  if (k.provider !== 'pkcs11') return false;
  const hasToken = (typeof k.tokenLabel === 'string') !== (Number.isInteger(k.slot) && (k.slot as number) >= 0);
  return typeof k.module === 'string' && typeof k.keyLabel === 'string' && k.keyLabel !== '' && hasToken && k.pin instanceof Uint8Array;
}

/** Where each root key's secret sits in the per-worker buffer; the configuration carries no secret. */
function layout(specs: RootKeySpec[]): { roots: RootKeyConfig[]; length: number } {
  let at = 0;
  const roots = specs.map((k): RootKeyConfig => {
    const length = k.provider === 'local' ? ENCRYPTION_KEY_BYTES : k.pin.byteLength;
    const secret: [number, number] = [at, length];
    at += length;
    if (k.provider === 'local') return { provider: 'local', version: k.version, secret };
    return {
      provider: 'pkcs11',
      version: k.version,
      secret,
      module: k.module,
      keyLabel: k.keyLabel,
      settingPrefix: k.settingPrefix ?? '',
      ...(k.tokenLabel !== undefined ? { tokenLabel: k.tokenLabel } : { slot: k.slot! }),
    };
  });
  return { roots, length: at };
}

/** The root keys' secrets, in order, in a fresh whole ArrayBuffer (never Node's shared pool, which cannot be moved). */
function secretBytes(specs: RootKeySpec[], length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  const view = Buffer.from(bytes.buffer);
  let at = 0;
  for (const k of specs) {
    if (k.provider === 'local') {
      if (view.write(k.keyHex, at, ENCRYPTION_KEY_BYTES, 'hex') !== ENCRYPTION_KEY_BYTES) {
        bytes.fill(0);
        throw new CryptoError('KEY_UNAVAILABLE');
      }
      at += ENCRYPTION_KEY_BYTES;
    } else {
      bytes.set(k.pin, at);
      at += k.pin.byteLength;
    }
  }
  return bytes;
}

/** Exported for the test that pins these settings; not for other layers. */
export function poolOptions(threads: number) {
  return {
    // The worker beside this module in the form it runs in: .js when built, .ts when a
    // test file runs straight from TypeScript (`npm run test:one`).
    filename: new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url).href,
    // Fixed size and never idle-reaped: a worker that goes away is a lost worker
    // (its replacement would start keyless), never a routine event.
    minThreads: threads,
    maxThreads: threads,
    idleTimeout: Infinity,
    // One task at a time per worker: what makes each worker take exactly one init task.
    concurrentTasksPerWorker: 1,
    env: {}, // workers do not inherit process.env (ENCRYPTION_KEY, DATABASE_URL, ...)
    // Nor the main thread's node options: a module preloaded there (--import/--require:
    // an APM agent, a test runner's loaders) does not run beside the keys, and a worker
    // starts without loading it again. From TypeScript the worker needs the TypeScript
    // loader it would inherit, so that form keeps the default.
    execArgv: import.meta.url.endsWith('.ts') ? undefined : [],
    // No workerData: piscina keeps it for the pool's life, to start replacements.
  };
}

/** MACs asked under one key while its last task is out: sent together next. */
interface MacBatch {
  wrappedKey: Buffer;
  keyAad: string;
  waiting: Array<{ message: string; resolve: (mac: Buffer) => void; reject: (err: unknown) => void }>;
}

/** Bounds one batched task (and the wait of the last caller in it). */
const MAX_MACS_PER_TASK = 256;

class PooledCrypto implements Crypto {
  readonly #pool: Piscina;
  readonly #onFatal: (() => void) | undefined;
  readonly #onTask: ((op: string, seconds: number) => void) | undefined;
  #renderChannel: BroadcastChannel | undefined;
  /** Slot N: the bytes worker N's render cache holds (each worker writes its own). */
  readonly #renderStats: Float64Array;
  readonly #renderCacheMaxBytes: number | undefined;
  // starting → running → (failed →) closed; failed and closed refuse every call.
  #state: 'starting' | 'running' | 'failed' | 'closed' = 'starting';
  #stopping: Promise<void> | undefined;
  readonly rootKeyVersion: number;
  readonly rootKeyProvider: ProviderKind;
  /** mac()'s batches with a task out, by key (AAD and wrapped bytes). */
  readonly #macBatches = new Map<string, MacBatch>();

  constructor(
    pool: Piscina,
    rootKeyVersion: number,
    rootKeyProvider: ProviderKind,
    onFatal: (() => void) | undefined,
    onTask: ((op: string, seconds: number) => void) | undefined,
    threads: number,
    renderCacheMaxBytes: number | undefined,
  ) {
    this.#pool = pool;
    this.#renderStats = new Float64Array(new SharedArrayBuffer(threads * Float64Array.BYTES_PER_ELEMENT));
    this.#renderCacheMaxBytes = renderCacheMaxBytes;
    this.rootKeyVersion = rootKeyVersion;
    this.rootKeyProvider = rootKeyProvider;
    this.#onFatal = onFatal;
    this.#onTask = onTask;
    // Piscina replaces a lost worker (crash, exit, termination) with a new one; an
    // 'error' is a worker failing outside any task. Either way a keyed worker is gone.
    pool.on('workerDestroy', () => this.#workerLost());
    pool.on('error', () => this.#workerLost());
  }

  get alive(): boolean {
    return this.#state === 'running';
  }

  /** Sends each worker its init task and checks that every live worker answered one. */
  async handOver(copies: Uint8Array[], roots: RootKeyConfig[]): Promise<void> {
    // [0]: init tasks taken; [1]: held while a worker builds its provider (see worker.ts).
    const taken = new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
    const inits = copies.map((keys) =>
      this.#run(
        { op: 'init', keys, roots, currentVersion: this.rootKeyVersion, taken, workers: copies.length, renderStats: this.#renderStats, ...(this.#renderCacheMaxBytes === undefined ? {} : { renderCacheMaxBytes: this.#renderCacheMaxBytes }) },
        [keys.buffer as ArrayBuffer],
      ),
    );
    const keyed = new Set((await Promise.all(inits)).map((r) => r.threadId));
    const live = this.#pool.threads.map((w) => w.threadId);
    const everyWorkerKeyed = keyed.size === copies.length && live.length === keyed.size && live.every((id) => keyed.has(id));
    if (this.#state !== 'starting' || !everyWorkerKeyed) throw new CryptoError('KEY_UNAVAILABLE');
    this.#state = 'running';
  }

  /** Start-up failed: stop every worker now (close() would wait for init tasks that never end). */
  async abort(): Promise<void> {
    this.#state = 'closed';
    this.#stopping ??= this.#pool.destroy();
    await this.#stopping;
  }

  #workerLost(): void {
    if (this.#state !== 'starting' && this.#state !== 'running') return;
    const wasRunning = this.#state === 'running';
    this.#state = 'failed';
    // After piscina has finished its own bookkeeping for this worker: stop the
    // survivors (they hold keys for nothing now) and the keyless replacement.
    queueMicrotask(() => {
      this.#stopping ??= this.#pool.destroy();
      if (wasRunning) this.#onFatal?.();
    });
  }

  async #run<K extends Task['op']>(task: Extract<Task, { op: K }>, transferList: Array<ArrayBuffer | MessagePort> = []): Promise<Results[K]> {
    if (this.#state === 'failed' || this.#state === 'closed') throw new CryptoError('KEY_UNAVAILABLE');
    let result: Results[K] | Failure;
    const started = this.#onTask === undefined ? 0 : performance.now();
    try {
      result = await this.#pool.run(task, { transferList });
      if (this.#onTask !== undefined) this.#onTask(task.op, (performance.now() - started) / 1000);
    } catch (err) {
      // The pool itself failed (worker lost, pool closed). The worker returns
      // rather than throws, so no task input is in this error.
      throw new CryptoError('KEY_UNAVAILABLE', undefined, { cause: err });
    }
    if (!result.ok) throw new CryptoError(result.code, result.index, undefined, result.reason);
    return result;
  }

  async generateDataKey(keyAad: string): Promise<Buffer> {
    return toBuffer((await this.#run({ op: 'generateDataKey', keyAad })).wrapped);
  }

  async sealMany(wrappedKey: Buffer, keyAad: string, items: Array<{ plaintext: string; aad: string }>): Promise<Buffer[]> {
    const { views: [key], transferList } = pack([wrappedKey]);
    const { blobs } = await this.#run({ op: 'seal', wrappedKey: key!, keyAad, items }, transferList);
    return blobs.map(toBuffer);
  }

  async openMany(wrappedKey: Buffer, keyAad: string, items: Array<{ blob: Buffer | Uint8Array; aad: string }>): Promise<string[]> {
    if (!Array.isArray(items)) throw new CryptoError('BAD_TASK');
    const { views: [key, ...blobs], transferList } = pack([wrappedKey, ...items.map((i) => i?.blob)]);
    const packed = items.map((i, n) => ({ blob: blobs[n]!, aad: i.aad }));
    return (await this.#run({ op: 'open', wrappedKey: key!, keyAad, items: packed }, transferList)).values;
  }

  async render(
    wrappedKey: Buffer,
    keyAad: string,
    cacheKey: string,
    segments: Segments | (() => Segments),
    items: RenderItems | AsyncIterable<PackedItems>,
    refuseIf?: string,
  ): Promise<Rendered> {
    const parts = isAsyncIterable(items) ? items : undefined;
    const packed = parts ? NO_ITEMS : asPacked(items);
    let count = packed.blobEnds.length;
    const fixedText = (given: unknown): { segments: string; segmentEnds: Uint32Array } => {
      if (Array.isArray(given)) {
        if (given.length !== count + 1 || !given.every((x) => typeof x === 'string')) throw new CryptoError('BAD_TASK');
        return { segments: given.join(''), segmentEnds: ends(given.map((x: string) => x.length)) };
      }
      const joined = given as Partial<FixedText> | null;
      // The worker checks that the ends ascend to the text's length.
      if (typeof joined?.text !== 'string' || !(joined.ends instanceof Uint32Array) || joined.ends.length !== count + 1) throw new CryptoError('BAD_TASK');
      return { segments: joined.text, segmentEnds: joined.ends };
    };
    // Packed (see RenderTask): the blobs and their AADs one buffer each, with where each piece ends.
    const { views: [key, blobs, aads], transferList } = pack([wrappedKey, packed.blobs, packed.aads]);
    const task = {
      op: 'render' as const,
      cacheKey,
      wrappedKey: key!,
      keyAad,
      blobs: blobs!,
      blobEnds: packed.blobEnds,
      aads: aads!,
      aadEnds: packed.aadEnds,
      ...(refuseIf !== undefined ? { refuseIf } : {}),
    };
    if (typeof segments !== 'function' && !parts) {
      return asRendered(await this.#run({ ...task, ...fixedText(segments) }, transferList)) ?? { refused: true };
    }
    // The worker opens the values while the fixed text is shaped here (and, streamed, while
    // the next items are produced), then gets it on a port.
    const { port1, port2 } = new MessageChannel();
    const result = this.#run({ ...task, segmentsPort: port2, ...(parts ? { itemsFollow: true as const } : {}) }, [...transferList, port2]);
    try {
      if (parts) {
        // The task may end before the parts do (a blob that does not open, a refusal): its
        // answer is then the answer, at once, and no more parts are awaited. Until the parts
        // end, nothing awaits the task: its failure is handled here, not left unhandled.
        const over = new Promise<typeof OVER>((resolve) => {
          port1.once('close', () => resolve(OVER));
          result.then(() => resolve(OVER), () => resolve(OVER));
        });
        const it = parts[Symbol.asyncIterator]();
        for (;;) {
          const next = await Promise.race([it.next(), over]);
          if (next === OVER) {
            void it.return?.()?.catch(() => {});
            return asRendered(await result) ?? { refused: true };
          }
          if (next.done) break;
          const p = asPacked(next.value);
          const { views: [blobs, aads], transferList: moved } = pack([p.blobs, p.aads]);
          port1.postMessage({ blobs: blobs!, blobEnds: p.blobEnds, aads: aads!, aadEnds: p.aadEnds }, moved);
          count += p.blobEnds.length;
        }
      }
      port1.postMessage(fixedText(typeof segments === 'function' ? segments() : segments));
    } catch (err) {
      // Closing the port fails the task (BAD_TASK); the caller gets what shaping threw.
      port1.close();
      await result.catch(() => undefined);
      throw err;
    }
    port1.close();
    return asRendered(await result) ?? { refused: true };
  }

  async rendered(cacheKey: string): Promise<Rendered | undefined> {
    return asRendered(await this.#run({ op: 'rendered', cacheKey }));
  }

  forgetRendered(prefix: string): void {
    if (this.#state === 'closed' || typeof prefix !== 'string') return;
    (this.#renderChannel ??= unrefChannel(new BroadcastChannel(RENDER_CHANNEL))).postMessage({ forgetPrefix: prefix });
  }

  /**
   * One MAC per machine login: those asked under one key while that key's last task is
   * with a worker go in the next task together (as the write pipeline groups the logins'
   * commits), not a task each. A lone call is sent at once. A batch shares its outcome:
   * its messages are all strings and its key is the same, so a failure (a key that does
   * not unwrap, a pool that is gone) is every caller's.
   */
  mac(wrappedKey: Buffer, keyAad: string, message: string): Promise<Buffer> {
    if (!Buffer.isBuffer(wrappedKey) || typeof keyAad !== 'string' || typeof message !== 'string') {
      return this.macMany(wrappedKey, keyAad, [message]).then((macs) => macs[0]!);
    }
    const id = `${keyAad}\0${wrappedKey.toString('base64')}`;
    const out = this.#macBatches.get(id);
    return new Promise<Buffer>((resolve, reject) => {
      if (out) out.waiting.push({ message, resolve, reject });
      else this.#sendMacs(id, { wrappedKey, keyAad, waiting: [{ message, resolve, reject }] });
    });
  }

  /** Sends what waits under the key; held in #macBatches while a task is out, so later calls join the next one. */
  #sendMacs(id: string, batch: MacBatch): void {
    const taken = batch.waiting.splice(0, MAX_MACS_PER_TASK);
    this.#macBatches.set(id, batch);
    this.macMany(batch.wrappedKey, batch.keyAad, taken.map((w) => w.message))
      .then(
        (macs) => taken.forEach((w, n) => w.resolve(macs[n]!)),
        (err: unknown) => taken.forEach((w) => w.reject(err)),
      )
      .finally(() => {
        if (batch.waiting.length > 0) this.#sendMacs(id, batch);
        else this.#macBatches.delete(id);
      });
  }

  async macMany(wrappedKey: Buffer, keyAad: string, messages: string[]): Promise<Buffer[]> {
    if (!Array.isArray(messages)) throw new CryptoError('BAD_TASK');
    const { views: [key], transferList } = pack([wrappedKey]);
    return (await this.#run({ op: 'mac', wrappedKey: key!, keyAad, messages }, transferList)).macs.map(toBuffer);
  }

  async macChain(
    wrappedKey: Buffer,
    keyAad: string,
    chain: { start: Buffer; links: Array<[string, string]>; final: [string, string]; extra: string[] },
  ): Promise<{ links: Buffer[]; final: Buffer; extra: Buffer[] }> {
    if (!chain || !Array.isArray(chain.links)) throw new CryptoError('BAD_TASK');
    const { views: [key, start], transferList } = pack([wrappedKey, chain.start]);
    const r = await this.#run({ op: 'macChain', wrappedKey: key!, keyAad, start: start!, links: chain.links, final: chain.final, extra: chain.extra }, transferList);
    return { links: r.links.map(toBuffer), final: toBuffer(r.final), extra: r.extra.map(toBuffer) };
  }

  async rewrap(wrapped: Buffer, keyAad: string, toVersion: number): Promise<Buffer> {
    const { views: [key], transferList } = pack([wrapped]);
    return toBuffer((await this.#run({ op: 'rewrap', wrapped: key!, keyAad, toVersion }, transferList)).wrapped);
  }

  async hashPassword(password: string): Promise<string> {
    return hash(password, ARGON2);
  }

  async verifyPassword(encoded: string, password: string): Promise<boolean> {
    // Only argon2id is accepted: a stored hash downgraded to another variant fails.
    if (typeof encoded !== 'string' || !encoded.startsWith('$argon2id$')) return false;
    try {
      return await verify(encoded, password);
    } catch {
      return false;
    }
  }

  poolStats(): CryptoPoolStats {
    const pool = this.#pool;
    let renderCacheBytes = 0;
    for (const b of this.#renderStats) renderCacheBytes += b;
    return {
      queueSize: pool.queueSize,
      threads: pool.threads.length,
      busySeconds: (pool.utilization * pool.duration * pool.options.maxThreads) / 1000,
      renderCacheBytes,
    };
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#renderChannel?.close();
    this.#renderChannel = undefined;
    this.#stopping ??= this.#pool.close();
    await this.#stopping;
  }
}

// Structured clone copies a view's whole ArrayBuffer: for a pooled Buffer that is
// 8 KiB of unrelated main-thread memory per chunk. Copy just the bytes into one
// fresh buffer and transfer it instead; the caller's buffers stay untouched.
function pack(views: unknown[]): { views: Uint8Array[]; transferList: ArrayBuffer[] } {
  if (!views.every((v) => v instanceof Uint8Array)) throw new CryptoError('BAD_TASK');
  const bytes = views as Uint8Array[];
  const all = new Uint8Array(bytes.reduce((n, v) => n + v.byteLength, 0));
  let at = 0;
  const out = bytes.map((v) => {
    all.set(v, at);
    at += v.byteLength;
    return all.subarray(at - v.byteLength, at);
  });
  return { views: out, transferList: [all.buffer] };
}

/** Running sums: where each piece ends in the concatenation. */
function ends(lengths: number[]): Uint32Array {
  const out = new Uint32Array(lengths.length);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) out[i] = at += lengths[i]!;
  return out;
}

const OVER = Symbol('task over');
const NO_ITEMS: PackedItems = { blobs: new Uint8Array(0), blobEnds: new Uint32Array(0), aads: new Uint8Array(0), aadEnds: new Uint32Array(0) };
const isAsyncIterable = (x: unknown): x is AsyncIterable<unknown> =>
  typeof (x as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';

/** Items as the render task carries them (the worker checks that the ends ascend to each whole). */
function asPacked(items: unknown): PackedItems {
  if (Array.isArray(items)) {
    if (!items.every((i) => typeof i?.aad === 'string')) throw new CryptoError('BAD_TASK');
    const listed = items as Array<{ blob: Uint8Array; aad: string }>;
    const aads = listed.map((i) => Buffer.from(i.aad, 'utf8'));
    return {
      blobs: concatBytes(listed.map((i) => i.blob)),
      blobEnds: ends(listed.map((i) => i.blob.byteLength)),
      aads: concatBytes(aads),
      aadEnds: ends(aads.map((a) => a.byteLength)),
    };
  }
  const p = items as Partial<PackedItems> | null;
  if (
    !(p?.blobs instanceof Uint8Array) ||
    !(p.aads instanceof Uint8Array) ||
    !(p.blobEnds instanceof Uint32Array) ||
    !(p.aadEnds instanceof Uint32Array) ||
    p.blobEnds.length !== p.aadEnds.length
  ) {
    throw new CryptoError('BAD_TASK');
  }
  return p as PackedItems;
}

/** The views' bytes in one fresh Uint8Array (refuses anything but Uint8Arrays). */
function concatBytes(views: unknown[]): Uint8Array {
  if (!views.every((v) => v instanceof Uint8Array)) throw new CryptoError('BAD_TASK');
  const bytes = views as Uint8Array[];
  const out = new Uint8Array(bytes.reduce((n, v) => n + v.byteLength, 0));
  let at = 0;
  for (const v of bytes) {
    out.set(v, at);
    at += v.byteLength;
  }
  return out;
}

function asRendered(r: { bytes?: Uint8Array; refused?: true }): Rendered | undefined {
  if (r.refused === true) return { refused: true };
  return r.bytes instanceof Uint8Array ? { bytes: toBuffer(r.bytes) } : undefined;
}

function unrefChannel(c: BroadcastChannel): BroadcastChannel {
  c.unref();
  return c;
}

// Structured clone delivers Uint8Array; wrap without copying.
const toBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);
