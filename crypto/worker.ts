// The piscina worker: the only thread that holds root keys and unwrapped data
// keys, and the only one that sees plaintext beyond the request that carries it.
//
// Expected failures are returned as { ok: false, code }, never thrown: an Error
// crossing the thread boundary loses its code, and its message could carry input.
import { createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { isMainThread, threadId } from 'node:worker_threads';
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
  | { op: 'rewrap'; wrapped: Uint8Array; keyAad: string; toVersion: number };

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
}

export interface Results {
  init: { ok: true; threadId: number };
  generateDataKey: { ok: true; wrapped: Uint8Array };
  seal: { ok: true; blobs: Uint8Array[] };
  open: { ok: true; values: string[] };
  mac: { ok: true; macs: Uint8Array[] };
  macChain: { ok: true; links: Uint8Array[]; final: Uint8Array; extra: Uint8Array[] };
  rewrap: { ok: true; wrapped: Uint8Array };
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
  Atomics.add(t.taken, 0, 1);
  Atomics.notify(t.taken, 0);
  for (let seen = Atomics.load(t.taken, 0); seen < t.workers; seen = Atomics.load(t.taken, 0)) {
    const wait = waitAsync(t.taken, 0, seen);
    if (wait.async) await wait.value;
  }
  return { ok: true, threadId };
}

// Unwrapped data keys, least recently used first (Map keeps insertion order).
// Keyed by aad and a digest of the wrapped bytes: the same bytes under the same
// aad always unwrap to the same key, so a hit is as good as an unwrap.
const cache = new Map<string, Buffer>();

async function dataKey(p: KeyProvider, wrapped: Buffer, keyAad: string): Promise<Buffer | null> {
  const id = `${keyAad}:${createHash('sha256').update(wrapped).digest('hex')}`;
  const hit = cache.get(id);
  if (hit !== undefined) {
    cache.delete(id);
    cache.set(id, hit);
    return hit;
  }
  const key = await p.unwrap(wrapped, keyAad);
  if (key === null || key.length !== 32) return null;
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(id, key);
  return key;
}

const fail = (code: ErrorCode, index?: number): Failure =>
  index === undefined ? { ok: false, code } : { ok: false, code, index };
const isStr = (v: unknown): v is string => typeof v === 'string';
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
      const blobs = t.items.map((i) => seal(key, DATA_KEY_VERSION, Buffer.from(i.plaintext, 'utf8'), i.aad));
      return transferring({ ok: true, blobs }, blobs);
    }

    // Also the start-up canary: UNWRAP_FAILED there means a wrong ENCRYPTION_KEY.
    case 'open': {
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !Array.isArray(t.items)) return fail('BAD_TASK');
      if (!t.items.every((i) => isBytes(i?.blob) && isStr(i.aad))) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const byVersion = (v: number) => (v === DATA_KEY_VERSION ? key : undefined);
      const values: string[] = [];
      for (const [index, item] of t.items.entries()) {
        const plain = open(byVersion, asBuffer(item.blob), item.aad);
        if (plain === null) return fail('OPEN_FAILED', index);
        values.push(plain.toString('utf8'));
      }
      return { ok: true, values };
    }

    // A separate subkey, so a MAC can never be confused with anything sealed
    // under the data key itself.
    case 'mac': {
      if (!isBytes(t.wrappedKey) || !isStr(t.keyAad) || !Array.isArray(t.messages) || !t.messages.every(isStr)) return fail('BAD_TASK');
      const key = await dataKey(keyProvider, asBuffer(t.wrappedKey), t.keyAad);
      if (key === null) return fail('UNWRAP_FAILED');
      const macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), MAC_INFO, 32));
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
      const macKey = Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), MAC_INFO, 32));
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
