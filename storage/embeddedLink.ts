// postgres.js talks to the embedded PGlite through this in-process stream, not a socket.
//
// @electric-sql/pglite-socket served it on a unix socket before: each protocol message
// (an extended query is Bind, Execute and Sync, more on its first use) went through its
// own queue entry, lock, WebAssembly call, file-system sync and socket write, and every
// byte through the kernel twice. Here what postgres.js writes at once is handed to
// PGlite in one call (its backend loop reads every message of the buffer, as from a
// socket; an error skips to the next Sync there, as PostgreSQL does), and the answers
// are handed back once PGlite has synced its files.
import { Duplex } from 'node:stream';

/** What the link needs of a PGlite instance. */
export interface PgliteLike {
  /** PGlite's query lock (what its own queries take; execProtocolRawStream does not). */
  runExclusive<T>(fn: () => Promise<T>): Promise<T>;
  execProtocolRawStream(message: Uint8Array, opts: { onRawData: (data: Uint8Array) => void }): Promise<void>;
  isInTransaction(): boolean;
  exec(query: string): Promise<unknown>;
}

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const GSS_REQUEST = 80877104;
const TERMINATE = 0x58; // 'X'

/**
 * One connection's stream (the pool has one). Untyped messages (SSLRequest, startup) come
 * first, then typed ones: a type byte and an int32 length that counts itself.
 */
export class PgliteLink extends Duplex {
  #db: PgliteLike;
  #pending: Buffer = Buffer.alloc(0);
  #startup = true;
  #closed = false;
  /** A #drain loop is running (or about to): it takes whatever #pending holds. */
  #running = false;

  constructor(db: PgliteLike) {
    super({ allowHalfOpen: false });
    this.#db = db;
  }

  /** As net.Socket's: postgres.js reads it to know whether to wait for 'close'. */
  get readyState(): 'open' | 'closed' {
    return this.destroyed ? 'closed' : 'open';
  }

  override _read(): void {}

  /**
   * Takes the bytes at once, as a socket's kernel buffer does, and runs them after:
   * the write's callback (and so 'drain', when write() said the buffer was full) comes
   * before PGlite answers, never after. postgres.js calls a connection free on a
   * 'drain' with no query in flight; a 'drain' after the answer of a transaction's
   * statement handed the transaction's connection to other callers (issue 31).
   */
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    done();
    // Writes made while PGlite is busy gather in #pending: the next call takes them all.
    // Started on the next tick, after the one on which Writable emits 'drain'.
    if (!this.#running) {
      this.#running = true;
      process.nextTick(() => this.#pump());
    }
  }

  #pump(): void {
    this.#drain().catch((err: unknown) => this.destroy(err as Error));
  }

  /** Hands every complete message held to PGlite; an incomplete one waits for its rest. */
  async #drain(): Promise<void> {
    try {
      await this.#drainLoop();
    } finally {
      // At once as the loop ends (not a microtask later): a write from here on starts the next.
      this.#running = false;
    }
  }

  async #drainLoop(): Promise<void> {
    while (!this.#closed) {
      const buf = this.#pending;
      if (this.#startup) {
        if (buf.length < 8) return;
        const length = buf.readInt32BE(0);
        if (buf.length < length) return;
        const code = buf.readInt32BE(4);
        this.#pending = buf.subarray(length);
        // No TLS in a process: "N", and the client goes on in the clear (as the socket server did).
        if (code === SSL_REQUEST || code === GSS_REQUEST) this.push(Buffer.from('N'));
        else if (code === CANCEL_REQUEST) {
          // PGlite runs one statement at a time to its end: nothing to cancel. The
          // connection closes, as PostgreSQL closes a cancel request's.
          this.destroy();
          return;
        } else {
          this.#startup = false;
          await this.#exec(buf.subarray(0, length));
        }
        continue;
      }
      // Every complete typed message: one call. A Terminate ends the stream (PGlite's
      // backend must never see it: it would exit).
      let end = 0;
      let terminate = false;
      while (buf.length - end >= 5) {
        const length = 1 + buf.readInt32BE(end + 1);
        if (length < 5 || buf.length - end < length) break;
        if (buf[end] === TERMINATE) {
          terminate = true;
          break;
        }
        end += length;
      }
      if (end === 0 && !terminate) return;
      this.#pending = buf.subarray(end + (terminate ? 5 : 0));
      if (end > 0) await this.#exec(buf.subarray(0, end));
      if (terminate) {
        this.destroy();
        return;
      }
    }
  }

  /** One call of PGlite on `messages`; its answers go to the client once it has synced its files. */
  async #exec(messages: Buffer): Promise<void> {
    const out: Buffer[] = [];
    // A copy: PGlite reads the bytes after this returns to the event loop, the buffer is postgres.js'.
    const input = new Uint8Array(messages);
    await this.#db.runExclusive(() => this.#db.execProtocolRawStream(input, { onRawData: (data) => void out.push(Buffer.from(data)) }));
    if (this.#closed) return;
    for (const b of out) this.push(b);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#closed = true;
    this.#pending = Buffer.alloc(0);
    // A connection dropped inside a transaction leaves none open for the next one.
    // (exec takes PGlite's lock itself.)
    const rollback = this.#db.isInTransaction() ? this.#db.exec('rollback').then(() => {}) : Promise.resolve();
    rollback.then(
      () => done(error),
      (err: unknown) => done(error ?? (err as Error)),
    );
  }
}
