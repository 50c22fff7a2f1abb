// The piscina worker: the only thread that holds root keys and unwrapped data
// keys, and the only one that sees plaintext beyond the request that carries it.
//
// Expected failures are returned as { ok: false, code }, never thrown: an Error
// crossing the thread boundary loses its code, and its message could carry input.
import { createHash, createHmac, createSecretKey, hkdfSync, randomBytes, type KeyObject } from 'node:crypto';
import { BroadcastChannel, isMainThread, MessagePort, receiveMessageOnPort, threadId } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { open, seal } from './blob.js';
import { ProviderConfigError, ProviderUnavailableError, type KeyProvider } from './keyProvider.js';
import { buildProvider, type RootKeyConfig } from './providers.js';

export type ErrorCode = 'OPEN_FAILED' | 'UNWRAP_FAILED' | 'BAD_TASK' | 'KEY_UNAVAILABLE';
export interface Failure {
  ok: false;
  code: ErrorCode;
  index?: number;
  /** Init only: why the provider could not be built, one line naming the setting (no secret). */
  reason?: string;
}

// Buffers arrive as Uint8Array: structured clone drops the Buffer prototype.
export type Task =
  | InitTask
  | { op: 'generateDataKey'; keyAad: string }
  | { op: 'seal'; wrappedKey: Uint8Array; keyAad: string; items: Array<{ plaintext: string; aad: string }> }
  | { op: 'open'; wrappedKey: Uint8Array; keyAad: string; items: Array<{ blob: Uint8Array; aad: string }> }
  | { op: 'mac'; wrappedKey: Uint8Array; keyAad: string; messages: string[] }
  | {
      op: 'macChain';
      wrappedKey: Uint8Array;
      keyAad: string;
      start: Uint8Array;
      links: Array<[string, string]>;
      final: [string, string];
      extra: string[];
    }
  | { op: 'rewrap'; wrapped: Uint8Array; keyAad: string; toVersion: number }
  | RenderTask
  | { op: 'rendered'; cacheKey: string };

/**
 * Opens n sealed items and writes each plaintext, as a JSON string literal (JSON.stringify's
 * quoting), between the caller's n + 1 fixed segments: segment[0] item[0] segment[1] …
 * item[n-1] segment[n]. The result is UTF-8 bytes, kept in this worker's bounded cache
 * under `cacheKey` (see renderCache below), so the plaintext is never a string on the
 * main thread: it receives finished bytes for the request that sends them.
 * Packed, so a folder of 10,000 secrets is a handful of cloned values, not 30,000:
 * `segments` is the texts concatenated, `blobs` the blobs and `aads` their AADs' UTF-8 bytes, and
 * each `*Ends` holds where each one ends.
 * `refuseIf`: when a plaintext contains it, nothing is rendered (`{ refused: true }`,
 * remembered under the key too): the caller needs the values themselves (reference
 * expansion happens on the main thread, for that request only).
 * Instead of `segments` / `segmentEnds`, a task may carry `segmentsPort`: the caller sends
 * them there (one message, `{ segments, segmentEnds }`) while this worker opens the values,
 * so shaping the answer's fixed text on the main thread and decrypting overlap. With
 * `itemsFollow`, the task's items are only the first of them: more follow on that port,
 * each message `{ blobs, blobEnds, aads, aadEnds }` as in the task, before the segments
 * (a folder's rows opened here while the main thread is still reading them).
 */
export interface RenderTask {
  op: 'render';
  cacheKey: string;
  wrappedKey: Uint8Array;
  keyAad: string;
  segments?: string;
  segmentEnds?: Uint32Array;
  segmentsPort?: MessagePort;
  itemsFollow?: true;
  blobs: Uint8Array;
  blobEnds: Uint32Array;
  /** Each blob's associated data, as UTF-8 bytes. */
  aads: Uint8Array;
  aadEnds: Uint32Array;
  refuseIf?: string;
}

/** Keys a worker, once; see init(). */
export interface InitTask {
  op: 'init';
  /** The root keys' secrets (ENCRYPTION_KEY bytes, PINs), in a buffer moved to this thread alone. */
  keys: Uint8Array;
  /** Each root key version: its provider, its settings and its slice of `keys`. */
  roots: RootKeyConfig[];
  currentVersion: number;
  /**
   * Shared by the whole pool: [0] counts the init tasks taken so far; [1] is 1 while a
   * worker builds its provider, so the workers of one process connect one at a time.
   */
  taken: Int32Array;
  workers: number;
  /** RENDER_CACHE_MAX_BYTES (default RENDER_CACHE_MAX_BYTES below). */
  renderCacheMaxBytes?: number;
  /** Shared by the whole pool: slot N holds the bytes worker N's render cache holds (for the metric). */
  renderStats?: Float64Array;
}

export interface Results {
  init: { ok: true; threadId: number };
  generateDataKey: { ok: true; wrapped: Uint8Array };
  seal: { ok: true; blobs: Uint8Array[] };
  open: { ok: true; values: string[] };
  mac: { ok: true; macs: Uint8Array[] };
  macChain: { ok: true; links: Uint8Array[]; final: Uint8Array; extra: Uint8Array[] };
  rewrap: { ok: true; wrapped: Uint8Array };
  render: { ok: true; bytes?: Uint8Array; refused?: true };
  /** `bytes` or `refused` as rendered under the key; neither: not in this worker's cache. */
  rendered: { ok: true; bytes?: Uint8Array; refused?: true };
}

// Every value blob is sealed under data key version 1 for now; the header field
// is there so a per-project data key rotation can add versions later.
const DATA_KEY_VERSION = 1;
const MAC_INFO = 'vault-standalone/mac/v1';
const CACHE_MAX = 1024;

// Set once, by this thread's init task; on the main thread, never.
let provider: KeyProvider | null = null;

// Atomics.waitAsync is in Node 20 but not in the ES2023 library types.
type WaitAsync = (a: Int32Array, index: number, value: number) => { async: boolean; value: Promise<unknown> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

// The pool starts N workers with no key material and sends N init tasks. Each one
// waits here until all N have been taken: a worker runs one task at a time, so a
// worker still inside its init task cannot take a second one, and every worker
// gets exactly one. The key bytes are zeroed as soon as the provider is built.
async function init(t: InitTask): Promise<Results['init'] | Failure> {
  if (!isBytes(t.keys) || !Array.isArray(t.roots) || !(t.taken instanceof Int32Array) || t.taken.length < 2 || !Number.isInteger(t.workers)) {
    if (isBytes(t?.keys)) t.keys.fill(0);
    return fail('BAD_TASK');
  }
  // One worker at a time: a PKCS#11 library is initialised once per process, and
  // C_Initialize / C_Login racing in several threads is undefined (SoftHSM2 failed
  // about one start in three with two workers).
  while (Atomics.compareExchange(t.taken, 1, 0, 1) !== 0) {
    const wait = waitAsync(t.taken, 1, 1);
    if (wait.async) await wait.value;
  }
  try {
    if (isMainThread || provider !== null) return fail('BAD_TASK');
    provider = buildProvider(t.roots, t.currentVersion, t.keys);
  } catch (err) {
    return err instanceof ProviderConfigError ? { ok: false, code: 'KEY_UNAVAILABLE', reason: err.message } : fail('KEY_UNAVAILABLE');
  } finally {
    t.keys.fill(0);
    Atomics.store(t.taken, 1, 0);
    Atomics.notify(t.taken, 1);
  }
  const slot = Atomics.add(t.taken, 0, 1);
  if (typeof t.renderCacheMaxBytes === 'number' && Number.isSafeInteger(t.renderCacheMaxBytes) && t.renderCacheMaxBytes >= 0) renderMaxBytes = t.renderCacheMaxBytes;
  if (t.renderStats instanceof Float64Array && slot < t.renderStats.length) renderStats = { shared: t.renderStats, slot };
  Atomics.notify(t.taken, 0);
  for (let seen = Atomics.load(t.taken, 0); seen < t.workers; seen = Atomics.load(t.taken, 0)) {
    const wait = waitAsync(t.taken, 0, seen);
    if (wait.async) await wait.value;
  }
  return { ok: true, threadId };
}

// Unwrapped data keys, least recently used first (Map keeps insertion order).
// Keyed by aad and a digest of the wrapped bytes: the same bytes under the same
// aad always unwrap to the same key, so a hit is as good as an unwrap. Held as a
// KeyObject (the unwrapped bytes are zeroed once copied into it): a cipher made from
// it skips copying the key in (~0.7 of ~5 µs per value opened), and its MAC subkey
// is derived once, not per task.
interface DataKey {
  readonly cipher: KeyObject;
  mac: Buffer | undefined;
}
const cache = new Map<string, DataKey>();

async function dataKey(p: KeyProvider, wrapped: Buffer, keyAad: string): Promise<DataKey | null> {
  const id = `${keyAad}:${createHash('sha256').update(wrapped).digest('hex')}`;
  const hit = cache.get(id);
  if (hit !== undefined) {
    cache.delete(id);
    cache.set(id, hit);
    return hit;
  }
  const key = await p.unwrap(wrapped, keyAad);
  if (key === null || key.length !== 32) {
    key?.fill(0);
    return null;
  }
  const entry: DataKey = { cipher: createSecretKey(key), mac: undefined };
  key.fill(0);
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(id, entry);
  return entry;
}

// A separate subkey, so a MAC can never be confused with anything sealed under the
// data key itself.
const macKeyOf = (key: DataKey): Buffer => (key.mac ??= Buffer.from(hkdfSync('sha256', key.cipher, Buffer.alloc(0), MAC_INFO, 32)));

// Rendered responses (plaintext, as UTF-8 JSON bytes), least recently used first. Inside
// the trust boundary that already holds every data key; bounded in bytes and entries.
// Keys name an exact version of their inputs (the caller never reuses a key for other
// content), so an entry can never be stale; the main thread also broadcasts the keys it
// no longer uses (an invalidated folder, a lost cache bus) on RENDER_CHANNEL, and they
// are dropped at once.
export const RENDER_CACHE_MAX_BYTES = 32 * 1024 * 1024;
export const RENDER_CACHE_MAX_ENTRIES = 4096;
/** The BroadcastChannel name: messages are `{ forgetPrefix: string }` (an empty prefix: all). */
export const RENDER_CHANNEL = 'vault-standalone/crypto/render-cache';
const REFUSED = new Uint8Array(0);
const renderCache = new Map<string, Uint8Array>();
let renderBytes = 0;
/** Set by init from RENDER_CACHE_MAX_BYTES. */
let renderMaxBytes = RENDER_CACHE_MAX_BYTES;
/** Where this worker publishes renderBytes for the main thread's metric (set by init). */
let renderStats: { shared: Float64Array; slot: number } | undefined;
const publishRenderBytes = () => {
  if (renderStats) renderStats.shared[renderStats.slot] = renderBytes;
};

function rememberRendered(key: string, bytes: Uint8Array): void {
  forgetRendered(key);
  if (bytes.byteLength > renderMaxBytes) return;
  while (renderCache.size > 0 && (renderBytes + bytes.byteLength > renderMaxBytes || renderCache.size >= RENDER_CACHE_MAX_ENTRIES)) {
    forgetRendered(renderCache.keys().next().value!);
  }
  renderCache.set(key, bytes);
  renderBytes += bytes.byteLength;
  publishRenderBytes();
}

function forgetRendered(key: string): void {
  const old = renderCache.get(key);
  if (old === undefined) return;
  renderCache.delete(key);
  renderBytes -= old.byteLength;
  publishRenderBytes();
  // Plaintext: zeroed, not left to the collector (a copy handed out is the receiver's).
  old.fill(0);
}

function forgetRenderedPrefix(prefix: string): void {
  for (const key of [...renderCache.keys()]) if (key.startsWith(prefix)) forgetRendered(key);
}

let renderChannel: BroadcastChannel | undefined;
/**
 * Applies the forgets broadcast since the last task. Read synchronously at the start of
 * every render task: piscina's idle workers block in Atomics.wait, so a message handler
 * would only run late; the cache is only read inside tasks, so this is in time.
 */
function applyForgets(): void {
  if (isMainThread) return;
  if (renderChannel === undefined) {
    renderChannel = new BroadcastChannel(RENDER_CHANNEL);
    // Never what keeps a worker alive: the pool owns its life.
    renderChannel.unref();
  }
  // Node accepts a BroadcastChannel here (since 15.4); its typings name MessagePort only.
  const port = renderChannel as unknown as MessagePort;
  for (let m = receiveMessageOnPort(port); m !== undefined; m = receiveMessageOnPort(port)) {
    const prefix = (m.message as { forgetPrefix?: unknown } | null)?.forgetPrefix;
    if (typeof prefix === 'string') forgetRenderedPrefix(prefix);
  }
}

/** The cached answer under `key` (refreshed as most recently used): a copy goes to the caller. */
function renderedResult(key: string): Results['rendered'] {
  const hit = renderCache.get(key);
  if (hit === undefined) return { ok: true };
  renderCache.delete(key);
  renderCache.set(key, hit);
  return hit === REFUSED ? { ok: true, refused: true } : { ok: true, bytes: hit };
}

/** Render-cache statistics for tests: never a key or a byte of content. */
export function renderCacheStats(): { entries: number; bytes: number } {
  return { entries: renderCache.size, bytes: renderBytes };
}

const fail = (code: ErrorCode, index?: number): Failure =>
  index === undefined ? { ok: false, code } : { ok: false, code, index };
const isStr = (v: unknown): v is string => typeof v === 'string';
/** Ends of consecutive pieces of a whole of `total`: never decreasing, the last one the whole. */
function ascending(ends: Uint32Array, total: number): boolean {
  let prev = 0;
  for (let i = 0; i < ends.length; i++) {
    if (ends[i]! < prev) return false;
    prev = ends[i]!;
  }
  return ends.length === 0 ? total === 0 : prev === total;
}
const isBytes = (v: unknown): v is Uint8Array => v instanceof Uint8Array;
const asBuffer = (u: Uint8Array): Buffer => Buffer.from(u.buffer, u.byteOffset, u.byteLength);

// Results are transferred, not copied. Only buffers this worker allocated whole
// (blob.seal uses Buffer.alloc) may be listed: transferring a slice of Node's
// shared pool would detach the pool.
function transferring<T extends object>(value: T, buffers: Uint8Array[]): T {
  const movable = {
    [Piscina.transferableSymbol]: buffers.map((b) => b.buffer),
    [Piscina.valueSymbol]: value,
  };
  return Piscina.move(movable as never) as unknown as T;
}

/** The fixed text of a render: in the task, or (segmentsPort) sent by the caller meanwhile. */
interface Segments {
  segments: string;
  segmentEnds: Uint32Array;
}
const isSegments = (v: unknown, n: number): v is Segments => {
  const x = v as Partial<Segments> | null;
  return (
    x !== null &&
    typeof x === 'object' &&
    isStr(x.segments) &&
    x.segmentEnds instanceof Uint32Array &&
    x.segmentEnds.length === n + 1 &&
    ascending(x.segmentEnds, x.segments.length)
  );
};

/** A render's items, as the task carries the first of them (packed). */
type Items = Pick<RenderTask, 'blobs' | 'blobEnds' | 'aads' | 'aadEnds'>;
const isItems = (v: unknown): v is Items => {
  const x = v as Partial<Items> | null;
  return (
    x !== null &&
    typeof x === 'object' &&
    isBytes(x.blobs) &&
    isBytes(x.aads) &&
    x.blobEnds instanceof Uint32Array &&
    x.aadEnds instanceof Uint32Array &&
    x.aadEnds.length === x.blobEnds.length &&
    ascending(x.blobEnds, x.blobs.byteLength) &&
    ascending(x.aadEnds, x.aads.byteLength)
  );
};

/** The messages of a render's port, in order; null once it is closed (or the task is over). */
function portMessages(port: MessagePort): { next(): Promise<unknown> } {
  const queue: unknown[] = [];
  let closed = false;
  let wake: (() => void) | undefined;
  port.on('message', (m: unknown) => {
    queue.push(m);
    wake?.();
  });
  port.once('close', () => {
    closed = true;
    wake?.();
  });
  return {
    async next() {
      while (queue.length === 0 && !closed) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      return queue.length > 0 ? queue.shift() : null;
    },
  };
}

async function render(keyProvider: KeyProvider, t: RenderTask): Promise<Results['render'] | Failure> {
  if (!isStr(t.cacheKey) || !isBytes(t.wrappedKey) || !isStr(t.keyAad) || !isItems(t)) return fail('BAD_TASK');
  const late = t.segmentsPort !== undefined;
  if (late ? !(t.segmentsPort instanceof MessagePort) || t.segments !== undefined || t.segmentEnds !== undefined : !isSegments(t, t.blobEnds.length)) {
    return fail('BAD_TASK');
  }
  if (t.itemsFollow !== undefined && (t.itemsFollow !== true || !late)) return fail('BAD_TASK');
  if (t.refuseIf !== undefined && (!isStr(t.refuseIf) || t.refuseIf === '')) return fail('BAD_TASK');
  applyForgets();
  const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
  if (key === null) return fail('UNWRAP_FAILED');
  const byVersion = (v: number) => (v === DATA_KEY_VERSION ? key.cipher : undefined);
  const refuse = t.refuseIf === undefined ? undefined : Buffer.from(t.refuseIf, 'utf8');
  // Each value as the bytes of its JSON string literal. Most values need no escaping:
  // their plaintext bytes, quoted in the answer, never decoded into a string here.
  const literals: Buffer[] = [];
  const quoted: number[] = []; // 1: literals[i] is already JSON.stringify's, quotes and all
  /** Opens the items after those opened so far: undefined, or why the render stops. */
  const openItems = ({ blobs, blobEnds, aads, aadEnds }: Items): Failure | { ok: true; refused: true } | undefined => {
    const all = asBuffer(blobs);
    const allAads = asBuffer(aads);
    for (let i = 0; i < blobEnds.length; i++) {
      const blob = all.subarray(i === 0 ? 0 : blobEnds[i - 1], blobEnds[i]);
      const aad = allAads.subarray(i === 0 ? 0 : aadEnds[i - 1], aadEnds[i]);
      const plain = open(byVersion, blob, aad);
      if (plain === null) return fail('OPEN_FAILED', literals.length);
      // Sealed from strings, so valid UTF-8: a byte search finds what a text search would.
      if (refuse !== undefined && plain.includes(refuse)) {
        plain.fill(0);
        rememberRendered(t.cacheKey, REFUSED);
        return { ok: true, refused: true };
      }
      if (needsNoEscape(plain)) {
        literals.push(plain);
        quoted.push(0);
      } else {
        literals.push(Buffer.from(JSON.stringify(plain.toString('utf8')), 'utf8'));
        quoted.push(1);
        plain.fill(0);
      }
    }
    return undefined;
  };
  try {
    const stop = openItems(t);
    if (stop) return stop;
    let fixed: unknown = t;
    if (late) {
      const port = portMessages(t.segmentsPort!);
      for (fixed = await port.next(); t.itemsFollow && isItems(fixed); fixed = await port.next()) {
        const stopped = openItems(fixed);
        if (stopped) return stopped;
      }
    }
    if (!isSegments(fixed, literals.length)) return fail('BAD_TASK');
    const bytes = assemble(fixed, literals, Uint8Array.from(quoted));
    rememberRendered(t.cacheKey, bytes);
    return { ok: true, bytes };
  } finally {
    // Plaintext: zeroed, not left to the collector.
    for (const l of literals) l.fill(0);
  }
}

/**
 * Printable ASCII but the quote and the backslash (DEL included: JSON.stringify leaves it
 * as it is): the JSON string literal of such bytes is the bytes in quotes.
 */
function needsNoEscape(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (b < 0x20 || b > 0x7f || b === 0x22 || b === 0x5c) return false;
  }
  return true;
}
const QUOTE = 0x22;

/**
 * segment[0] literal[0] segment[1] … literal[n-1] segment[n] as UTF-8 bytes, in a whole
 * ArrayBuffer of its own (never Node's shared pool: it is cached, and zeroed when dropped).
 * The fixed text is encoded at once when it is ASCII (its character ends are then its
 * byte ends, the usual case), segment by segment otherwise.
 */
function assemble({ segments, segmentEnds }: Segments, literals: readonly Buffer[], quoted: Uint8Array): Uint8Array {
  const start = (i: number) => (i === 0 ? 0 : segmentEnds[i - 1]!);
  const whole = Buffer.from(segments, 'utf8');
  const pieces =
    whole.length === segments.length
      ? undefined
      : Array.from(segmentEnds, (end, i) => Buffer.from(segments.slice(start(i), end), 'utf8'));
  const piece = (i: number) => (pieces === undefined ? whole.subarray(start(i), segmentEnds[i]) : pieces[i]!);
  let total = pieces === undefined ? whole.length : pieces.reduce((sum, p) => sum + p.length, 0);
  for (let i = 0; i < literals.length; i++) total += literals[i]!.length + (quoted[i] ? 0 : 2);
  const out = new Uint8Array(total);
  let at = 0;
  for (let i = 0; ; i++) {
    const p = piece(i);
    out.set(p, at);
    at += p.length;
    if (i === literals.length) break;
    const l = literals[i]!;
    if (!quoted[i]) out[at++] = QUOTE;
    out.set(l, at);
    at += l.length;
    if (!quoted[i]) out[at++] = QUOTE;
  }
  return out;
}

export default async function handle(task: unknown): Promise<Results[keyof Results] | Failure> {
  try {
    return await dispatch(task as Task);
  } catch (err) {
    // A provider that cannot serve now (token removed): the caller answers 503, and
    // data keys already in the cache keep serving.
    return fail(err instanceof ProviderUnavailableError ? 'KEY_UNAVAILABLE' : 'BAD_TASK');
  }
}

async function dispatch(t: Task): Promise<Results[keyof Results] | Failure> {
  if (t === null || typeof t !== 'object') return fail('BAD_TASK');
  if (t.op === 'init') return init(t);
  // A worker the pool started to replace a lost one has no keys, and never will.
  const keyProvider = provider;
  if (keyProvider === null) return fail('KEY_UNAVAILABLE');

  switch (t.op) {
    case 'generateDataKey': {
      if (!isStr(t.keyAad)) return fail('BAD_TASK');
      const key = randomBytes(32);
      try {
        return { ok: true, wrapped: await keyProvider.wrap(key, t.keyAad) };
      } finally {
        key.fill(0);
      }
    }

    case 'seal': {
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !Array.isArray(t.items)) return fail('BAD_TASK');
      if (!t.items.every((i) => isStr(i?.plaintext) && isStr(i.aad))) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const blobs = t.items.map((i) => seal(key.cipher, DATA_KEY_VERSION, Buffer.from(i.plaintext, 'utf8'), i.aad));
      return transferring({ ok: true, blobs }, blobs);
    }

    // Also the start-up canary: UNWRAP_FAILED there means a wrong ENCRYPTION_KEY.
    case 'open': {
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !Array.isArray(t.items)) return fail('BAD_TASK');
      if (!t.items.every((i) => isBytes(i?.blob) && isStr(i.aad))) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const byVersion = (v: number) => (v === DATA_KEY_VERSION ? key.cipher : undefined);
      const values: string[] = [];
      for (const [index, item] of t.items.entries()) {
        const plain = open(byVersion, asBuffer(item.blob), item.aad);
        if (plain === null) return fail('OPEN_FAILED', index);
        values.push(plain.toString('utf8'));
      }
      return { ok: true, values };
    }

    case 'rendered': {
      if (!isStr(t.cacheKey)) return fail('BAD_TASK');
      applyForgets();
      return renderedResult(t.cacheKey);
    }

    case 'render': {
      const port = t.segmentsPort;
      try {
        return await render(keyProvider, t);
      } finally {
        // Unread when the task failed or refused early: the caller's message goes nowhere.
        if (port instanceof MessagePort) port.close();
      }
    }

    case 'mac': {
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !Array.isArray(t.messages) || !t.messages.every(isStr)) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const macKey = macKeyOf(key);
      return { ok: true, macs: t.messages.map((m) => createHmac('sha256', macKey).update(m, 'utf8').digest()) };
    }

    // A hash chain's links in one task (the audit trail): link n's message is
    // before + hex(prev) + after, prev being the MAC before it (start for the first).
    case 'macChain': {
      const isPair = (p: unknown) => Array.isArray(p) && p.length === 2 && isStr(p[0]) && isStr(p[1]);
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !isBytes(t.start) || !Array.isArray(t.links) || !t.links.every(isPair)) {
        return fail('BAD_TASK');
      }
      if (!isPair(t.final) || !Array.isArray(t.extra) || !t.extra.every(isStr)) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const macKey = macKeyOf(key);
      const mac = (m: string) => createHmac('sha256', macKey).update(m, 'utf8').digest();
      const links: Buffer[] = [];
      let prev = asBuffer(t.start);
      let lastPrev = prev;
      for (const [before, after] of t.links) {
        lastPrev = prev;
        prev = mac(before + prev.toString('hex') + after);
        links.push(prev);
      }
      return { ok: true, links, final: mac(t.final[0] + lastPrev.toString('hex') + t.final[1]), extra: t.extra.map(mac) };
    }

    // Not cached: rotation touches each key once.
    case 'rewrap': {
      if (!isBytes(t.wrapped) || !isStr(t.keyAad) || !Number.isInteger(t.toVersion)) return fail('BAD_TASK');
      if (!keyProvider.versions.includes(t.toVersion)) return fail('KEY_UNAVAILABLE');
      const key = await keyProvider.unwrap(asBuffer(t.wrapped), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      try {
        return { ok: true, wrapped: await keyProvider.wrap(key, t.keyAad, t.toVersion) };
      } finally {
        key.fill(0);
      }
    }

    default:
      return fail('BAD_TASK');
  }
}
