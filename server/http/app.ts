// The HTTP front: uWebSockets.js (native, hash-pinned) behind one request pipeline that
// every route shares. Header guard against request smuggling, body cap, abort handling,
// security headers and error mapping happen here once; routes see only plain
// HttpRequest / HttpReply values (server/http/types.ts).
import { randomFillSync } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { AppOptions, HttpRequest as UwsRequest, HttpResponse as UwsResponse, TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js';
import { AppError, RETRY_AFTER_SECONDS, toErrorBody } from '../errors.js';
import type { Handler, HttpReply, HttpRequest, ReplyStream, Method, RequestRecord, Router } from './types.js';
import { uwsTlsOptions, type TlsFiles } from './tls.js';
import { uws } from './uws.js';

export interface HttpLogger {
  error(obj: Record<string, unknown>, msg: string): void;
}

export interface HttpServerOptions {
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** Where 5xx errors are reported (default: one JSON line on stderr). */
  logger?: HttpLogger;
  /**
   * Handles requests no route matched (any method; `method` is then whatever the client
   * sent, upper-cased). Default: 404 JSON "Route <METHOD>:<path> not found".
   */
  onNotFound?: Handler;
  /** Extra or replacement response headers sent on every response (merged over the defaults). */
  securityHeaders?: Record<string, string>;
  /**
   * Called once per request after its answer was written (or the client went away: 499),
   * for the request log and the metrics. Must not throw.
   */
  onResponse?: (record: RequestRecord) => void;
  /**
   * A handler that has not answered within this many ms is answered 503 with Retry-After
   * (its work goes on; its late reply is dropped). Default: no deadline.
   */
  deadlineMs?: number;
  /**
   * Whether every request's client address is read when it arrives (default true): what
   * onResponse needs when it logs the address, since `res` is off limits once answered.
   * With false a read (GET, and HEAD with it) reads it on first use, and only while the request is
   * open: asking the socket costs ~5 µs (a system call), a tenth of a cached read's CPU.
   * Requests that may write read it at once, for their audit entries.
   */
  readAddressOnArrival?: boolean;
  /** Most bytes queued behind one slow streaming client before its connection is closed (default 256 KiB). */
  maxStreamBufferBytes?: number;
  /**
   * A reply larger than STREAM_MIN_BYTES that makes no progress (its client reads nothing)
   * for this many ms has its connection closed. Default 10000; uWS's own idle timeout
   * (10 s) closes such a connection too, so a larger value acts as 10 s.
   */
  slowClientTimeoutMs?: number;
  /**
   * Cap on the bytes of replies not yet taken by their clients' sockets, summed over every
   * connection. A large reply that would go over it is answered 503 with Retry-After
   * instead. Default 64 MiB.
   */
  maxUnsentBytes?: number;
  /** Serve HTTPS with this certificate/key pair (checked beforehand: server/http/tls.ts). */
  tls?: TlsFiles;
}

export interface HttpServer {
  router: Router;
  /** Resolves with the port actually bound (useful with port 0). */
  listen(port: number, host?: string): Promise<number>;
  /**
   * Stops accepting connections; in-flight requests may finish, and every response sent
   * from now on closes its connection (`Connection: close`), so keep-alive clients move
   * on. `force`: also drop every open connection at once. Idempotent.
   */
  close(force?: boolean): void;
  /**
   * Resolves true once no request has been in flight for `quietMs` (default
   * DRAIN_QUIET_MS), or false when `timeoutMs` ran out first.
   */
  drain(timeoutMs: number, quietMs?: number): Promise<boolean>;
  /** Requests received and not yet answered (nor abandoned by their client). */
  readonly inFlight: number;
  /** Bytes of replies held for clients that have not read them yet (all connections). */
  readonly unsentBytes: number;
  /** Connections closed because their reply made no progress for slowClientTimeoutMs. */
  readonly slowClientCloses: number;
  /** Large replies refused (503) because unsentBytes would have gone over maxUnsentBytes. */
  readonly unsentRefusals: number;
  /**
   * TLS only: new connections asking (SNI) for one of `names` get the pair in `files`
   * from now on; names given by the previous call are dropped first. This uWS build cannot
   * swap the default certificate of a listening app (nor re-bind the port while
   * connections are open), so a reload serves the new pair by server name. `files` must
   * hold a checked pair: uWS crashes the process on a mismatched one (server/http/tls.ts).
   */
  serveCertificate(names: readonly string[], files: TlsFiles): void;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/**
 * Replies up to this size are handed to uWS whole (res.end), which buffers what the socket
 * does not take: at most this much per connection. Larger ones are streamed with
 * tryEnd/onWritable, so uWS buffers nothing of them and the unsent part is counted.
 */
export const STREAM_MIN_BYTES = 64 * 1024;
export const DEFAULT_SLOW_CLIENT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_UNSENT_BYTES = 64 * 1024 * 1024;
/** How long a drain waits with nothing in flight before it is done. */
export const DRAIN_QUIET_MS = 250;
/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT: bind without SO_REUSEPORT. */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/** The port could not be bound (another process holds it). */
export class ListenError extends Error {
  override readonly name = 'ListenError';
}
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
export const DEFAULT_SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
});

// ---------------------------------------------------------------------------------------
// Request ids: "req-" + 14 base62 characters from a pooled CSPRNG buffer (unbiased).

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const idPool = Buffer.allocUnsafe(4096);
let idPos = idPool.length;

export function newReqId(): string {
  let id = 'req-';
  let n = 0;
  while (n < 14) {
    if (idPos >= idPool.length) {
      randomFillSync(idPool);
      idPos = 0;
    }
    const b = idPool[idPos++]!;
    if (b < 248) {
      // 248 = 4 * 62: keeps the distribution uniform
      id += BASE62[b % 62];
      n++;
    }
  }
  return id;
}

// ---------------------------------------------------------------------------------------
// The plain request handed to routes.

const EMPTY_BODY = Buffer.alloc(0);

/**
 * A request body's bytes in memory of their own (Buffer.from and Buffer.concat cut small
 * Buffers from a shared 8 KB slab, which stays reachable, plaintext included, for as long
 * as any other Buffer cut from it lives): unreachable once the request is done.
 */
function ownedCopy(bytes: Uint8Array): Buffer {
  const copy = Buffer.allocUnsafeSlow(bytes.byteLength);
  copy.set(bytes);
  return copy;
}

class PlainRequest implements HttpRequest {
  reqId: string;
  method: Method;
  path: string;
  params: Record<string, string>;
  headers: Record<string, string>;
  body: Buffer;
  route: string | undefined;
  actor: { kind: string; id: string } | undefined;
  /** performance.now() when the request arrived. */
  readonly start: number;
  readonly rawQuery: string;
  private parsedQuery: URLSearchParams | undefined;
  /** The address once read, or how to read it (see readAddressOnArrival). */
  private address: string | (() => string);

  constructor(reqId: string, method: Method, path: string, rawQuery: string, headers: Record<string, string>, address: string | (() => string)) {
    this.reqId = reqId;
    this.method = method;
    this.path = path;
    this.params = {};
    this.headers = headers;
    this.body = EMPTY_BODY;
    this.address = address;
    this.route = undefined;
    this.actor = undefined;
    this.start = performance.now();
    this.rawQuery = rawQuery;
    this.parsedQuery = undefined;
  }
  get remoteAddress(): string {
    if (typeof this.address === 'function') this.address = this.address();
    return this.address;
  }

  /** Parsed on first use: most routes never read the query. */
  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }
}

/** Per-request state that never leaves this file. */
class Exchange {
  readonly res: UwsResponse;
  readonly req: PlainRequest;
  /** Set when the client went away or the response was ended: `res` is off limits then. */
  done = false;
  /** Declared Content-Length still to be read (0: no body). */
  bodyLength = 0;
  /** A HEAD request: answered as GET, with the headers (Content-Length included) and no body. */
  head = false;
  readonly onAborted: () => void;
  /** Called once, when the exchange is answered or abandoned (in-flight accounting). */
  settle: () => void;
  /** The deadline timer, cleared on the answer. */
  timer: NodeJS.Timeout | undefined = undefined;
  /** A streaming response's close, run when the client goes away. */
  gone: (() => void) | undefined = undefined;

  constructor(res: UwsResponse, req: PlainRequest, settle: () => void, report: ((ex: Exchange, status: number) => void) | undefined) {
    this.res = res;
    this.req = req;
    let settled = false;
    this.settle = () => {
      if (settled) return;
      settled = true;
      if (this.timer !== undefined) clearTimeout(this.timer);
      settle();
    };
    this.onAborted = () => {
      if (!this.done && this.gone === undefined && report !== undefined) report(this, 499);
      this.done = true;
      this.settle();
      this.gone?.();
    };
  }
}

// ---------------------------------------------------------------------------------------
// Header guard. uWS's parser (this version) serves a request hidden behind a duplicate
// Content-Length and accepts duplicate Host; see SECURITY.md ("uWebSockets.js"). `req.forEach` runs
// a module-level callback (no closure per request) that fills these scratch variables;
// it is synchronous, so they are never shared between requests.

let hHeaders: Record<string, string> = Object.create(null) as Record<string, string>;
let hContentLength: string | undefined;
let hContentLengthCount = 0;
let hTransferEncodingCount = 0;
let hHostCount = 0;
let hDuplicate: string | undefined;

function collectHeader(key: string, value: string): void {
  const headers = hHeaders;
  const prev = headers[key];
  switch (key) {
    case 'content-length':
      hContentLengthCount++;
      hContentLength = value;
      break;
    case 'transfer-encoding':
      hTransferEncodingCount++;
      break;
    case 'host':
      hHostCount++;
      break;
    case 'authorization':
    case 'content-type':
      // Ambiguous credentials or body type: refuse rather than pick one.
      if (prev !== undefined) hDuplicate = key;
      break;
  }
  headers[key] = prev === undefined ? value : `${prev}, ${value}`;
}

const enum Guard {
  Ok,
  /** Smuggling attempt or unparseable framing: close the connection without a response. */
  Close,
  /** Chunked request body: 411 and close. */
  Chunked,
  /** Duplicate authorization / content-type: 400. */
  Duplicate,
}

/** Walks the headers into `hHeaders` and classifies the framing. */
function guardHeaders(req: UwsRequest): Guard {
  hHeaders = Object.create(null) as Record<string, string>;
  hContentLength = undefined;
  hContentLengthCount = 0;
  hTransferEncodingCount = 0;
  hHostCount = 0;
  hDuplicate = undefined;
  req.forEach(collectHeader);
  if (hContentLengthCount > 1 || hTransferEncodingCount > 1 || hHostCount > 1) return Guard.Close;
  if (hTransferEncodingCount === 1) return hContentLengthCount === 0 ? Guard.Chunked : Guard.Close;
  if (hDuplicate !== undefined) return Guard.Duplicate;
  return Guard.Ok;
}

/**
 * Content-Length as a number: -1 when not all ASCII digits (uWS would read "1a" as 59),
 * Infinity when absurdly long.
 */
function parseContentLength(value: string): number {
  const len = value.length;
  if (len === 0) return -1;
  if (len > 15) {
    for (let i = 0; i < len; i++) {
      const c = value.charCodeAt(i);
      if (c < 48 || c > 57) return -1;
    }
    return Infinity;
  }
  let n = 0;
  for (let i = 0; i < len; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    n = n * 10 + (c - 48);
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// Writing replies: always corked; the cork callback is one module-level function reading
// scratch variables (it runs synchronously inside cork()).

const STATUS_LINES = new Map<number, string>();
function statusLine(status: number): string {
  let line = STATUS_LINES.get(status);
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`;
    STATUS_LINES.set(status, line);
  }
  return line;
}

let wRes: UwsResponse | undefined;
let wHeader = '';
let wBody: string | Buffer | undefined;
let wHead = false;
let wClose = false;
/** Set for a large reply: streams the body once the head is written (see streamReply). */
let wStream: ((res: UwsResponse) => void) | undefined;

/**
 * One native call writes the status line and every header: uWS's writeStatus(s) sends
 * `HTTP/1.1 ${s}\r\n` and writeHeader(k, v) sends `${k}: ${v}\r\n`, so a status
 * followed by `\r\n`-joined header lines (each checked for CR/LF where it is built) puts
 * exactly the bytes of one writeStatus and N writeHeader calls on the wire, in the same
 * order; uWS then adds Date, its own mark and Content-Length at end(), as before.
 */
function corkedWrite(): void {
  const res = wRes!;
  res.writeStatus(wHeader);
  // endWithoutBody() only without arguments: (undefined, false) leaves the response open.
  if (wBody === undefined) res.endWithoutBody();
  else if (wHead) endHead(res, wBody, wClose);
  else if (wStream !== undefined) wStream(res);
  else res.end(wBody, wClose);
}

/**
 * HEAD: the headers of the reply, Content-Length included, and no body (RFC 9110 9.3.2).
 * endWithoutBody(length) of this uWS version waits for `length` bytes that never come,
 * so the length is written as a header and the response ended without one of uWS's.
 */
function endHead(res: UwsResponse, body: string | Buffer, close: boolean): void {
  // A refused request that also closes the connection (411, 413): nothing follows on
  // it, so the length is moot and end('') both ends and closes.
  if (close) {
    res.end('', true);
    return;
  }
  res.writeHeader('Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.length));
  res.endWithoutBody();
}

/**
 * A handler may replace the default Cache-Control (the UI's hashed assets are immutable);
 * the other security headers cannot be replaced.
 */
function setsCacheControl(headers: readonly (readonly [string, string])[]): boolean {
  for (let i = 0; i < headers.length; i++) if (headers[i]![0].toLowerCase() === 'cache-control') return true;
  return false;
}

function hasCrLf(s: string): boolean {
  return s.indexOf('\r') !== -1 || s.indexOf('\n') !== -1;
}

/** Header names that the front owns; a handler's own values for these are ignored. */
const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'x-request-id', 'date']);

function replyHeaders(headers: Record<string, string> | undefined, raw: boolean): [string, string][] | undefined {
  if (headers === undefined) return undefined;
  let out: [string, string][] | undefined;
  for (const key in headers) {
    const value = headers[key];
    if (typeof value !== 'string') continue;
    const lower = key.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) continue;
    if (lower === 'content-type' && !raw) continue;
    if (hasCrLf(key) || hasCrLf(value) || key.indexOf(':') !== -1) {
      throw new Error(`Invalid response header ${JSON.stringify(key)}`);
    }
    (out ??= []).push([key, value]);
  }
  return out;
}

const NO_BODY_STATUS = new Set([204, 304]);

/** A body worth streaming, as bytes; undefined when it is small enough to hand over whole. */
function largeBody(body: string | Buffer): Buffer | undefined {
  if (typeof body === 'string') {
    // At most 3 bytes per UTF-16 unit: short strings need no counting.
    if (body.length * 3 <= STREAM_MIN_BYTES || Buffer.byteLength(body) <= STREAM_MIN_BYTES) return undefined;
    return Buffer.from(body);
  }
  return body.length > STREAM_MIN_BYTES ? body : undefined;
}

// ---------------------------------------------------------------------------------------

function defaultLogger(): HttpLogger {
  return {
    error(obj, msg) {
      process.stderr.write(`${JSON.stringify({ level: 'error', msg, ...obj })}\n`);
    },
  };
}

const UWS_METHOD = {
  GET: 'get',
  POST: 'post',
  PATCH: 'patch',
  PUT: 'put',
  DELETE: 'del',
} as const satisfies Record<Method, keyof TemplatedApp>;

/** Parameter names of a uWS pattern, in getParameter() order. */
function paramNames(pattern: string): string[] {
  const names: string[] = [];
  for (const segment of pattern.split('/')) {
    if (segment.startsWith(':')) names.push(segment.slice(1));
  }
  return names;
}

export function createHttpServer(opts: HttpServerOptions = {}): HttpServer {
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 0) throw new Error(`Invalid maxBodyBytes: ${maxBodyBytes}`);
  const logger = opts.logger ?? defaultLogger();
  const onNotFound = opts.onNotFound;
  const onResponse = opts.onResponse;
  const report =
    onResponse === undefined
      ? undefined
      : (ex: Exchange, status: number) => {
          const req = ex.req;
          try {
            onResponse({
              reqId: req.reqId,
              method: ex.head ? 'HEAD' : req.method,
              route: req.route,
              status,
              durationMs: performance.now() - req.start,
              actor: req.actor,
              req,
            });
          } catch {
            // A broken log sink must not break answering.
          }
        };
  const security = Object.entries({ ...DEFAULT_SECURITY_HEADERS, ...opts.securityHeaders }).map(
    ([k, v]) => [k, v] as const,
  );
  for (const [k, v] of security) {
    if (hasCrLf(k) || hasCrLf(v)) throw new Error(`Invalid security header ${JSON.stringify(k)}`);
  }

  // Status line, Content-Type and the security headers joined once per combination, up to
  // the request id's value (see corkedWrite).
  const prefixes = new Map<string, string>();
  function headPrefix(status: number, contentType: string | undefined, ownCaching: boolean): string {
    const id = `${status}\n${ownCaching ? 1 : 0}\n${contentType ?? ''}`;
    let p = prefixes.get(id);
    if (p === undefined) {
      p = statusLine(status);
      if (contentType !== undefined) p += `\r\nContent-Type: ${contentType}`;
      for (const [k, v] of security) {
        if (ownCaching && k.toLowerCase() === 'cache-control') continue;
        p += `\r\n${k}: ${v}`;
      }
      p += '\r\nX-Request-Id: ';
      // Content types come from this file or from handlers' checked headers: a handful.
      if (prefixes.size < 256) prefixes.set(id, p);
    }
    return p;
  }

  const deadlineMs = opts.deadlineMs;
  const slowClientTimeoutMs = opts.slowClientTimeoutMs ?? DEFAULT_SLOW_CLIENT_TIMEOUT_MS;
  const maxUnsentBytes = opts.maxUnsentBytes ?? DEFAULT_MAX_UNSENT_BYTES;
  if (!Number.isSafeInteger(slowClientTimeoutMs) || slowClientTimeoutMs <= 0) throw new Error(`Invalid slowClientTimeoutMs: ${slowClientTimeoutMs}`);
  if (!Number.isSafeInteger(maxUnsentBytes) || maxUnsentBytes < 0) throw new Error(`Invalid maxUnsentBytes: ${maxUnsentBytes}`);
  let unsentBytes = 0;
  let slowClientCloses = 0;
  let unsentRefusals = 0;
  const readAddressOnArrival = opts.readAddressOnArrival ?? true;
  if (deadlineMs !== undefined && (!Number.isSafeInteger(deadlineMs) || deadlineMs <= 0)) throw new Error(`Invalid deadlineMs: ${deadlineMs}`);

  const app = opts.tls === undefined ? uws.App() : uws.SSLApp(uwsTlsOptions(opts.tls) as AppOptions);
  let serverNames: readonly string[] = [];
  // Every route is declared through `declare`, so that a server name added by a TLS
  // reload gets them too (uWS keeps one router per server name).
  const declarations: Array<(a: TemplatedApp) => void> = [];
  const declare = (d: (a: TemplatedApp) => void): void => {
    declarations.push(d);
    d(app);
  };
  let listenSocket: us_listen_socket | undefined;
  let closed = false;
  let inFlight = 0;
  let idle: Array<() => void> = [];
  const settle = () => {
    if (--inFlight === 0 && idle.length > 0) {
      const waiting = idle;
      idle = [];
      for (const w of waiting) w();
    }
  };

  // -- writing ---------------------------------------------------------------------------

  /**
   * Writes a large body with tryEnd (uWS writes what the socket takes and buffers none of
   * the rest) and the rest on onWritable. The unsent remainder is counted in unsentBytes;
   * a reply that makes no progress for slowClientTimeoutMs has its connection closed.
   * Runs inside the cork that wrote the head.
   */
  function streamReply(res: UwsResponse, body: Buffer): void {
    const total = body.length;
    const [, finished] = res.tryEnd(body, total);
    if (finished) return;
    let sent = res.getWriteOffset();
    unsentBytes += total - sent;
    let lastProgress = performance.now();
    let over = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      if (over) return;
      over = true;
      unsentBytes -= total - sent;
      if (timer !== undefined) clearTimeout(timer);
    };
    const check = () => {
      timer = undefined;
      if (over) return;
      const idleFor = performance.now() - lastProgress;
      if (idleFor >= slowClientTimeoutMs) {
        // Timers run before the loop polls the sockets: after a stall of this process, a
        // writable event may be waiting. Decide after the poll (setImmediate), so that the
        // client is blamed only for its own lack of progress.
        setImmediate(closeIfIdle);
        return;
      }
      timer = setTimeout(check, slowClientTimeoutMs - idleFor);
    };
    const closeIfIdle = () => {
      if (over) return;
      const idleFor = performance.now() - lastProgress;
      if (idleFor < slowClientTimeoutMs) {
        timer = setTimeout(check, slowClientTimeoutMs - idleFor);
        return;
      }
      slowClientCloses++;
      finish();
      // onAborted follows (synchronously or not) and finds nothing left to do.
      res.close();
    };
    timer = setTimeout(check, slowClientTimeoutMs);
    res.onAborted(finish);
    res.onWritable((offset) => {
      if (over) return true;
      const [ok, done] = res.tryEnd(body.subarray(offset), total);
      const now = done ? total : res.getWriteOffset();
      if (now > sent) {
        unsentBytes -= now - sent;
        sent = now;
        lastProgress = performance.now();
      }
      if (done) finish();
      return ok;
    });
  }

  function write(
    ex: Exchange,
    status: number,
    contentType: string | undefined,
    extra: readonly (readonly [string, string])[] | undefined,
    body: string | Buffer | undefined,
    close: boolean,
  ): void {
    if (ex.done) return;
    const large = body === undefined || ex.head ? undefined : largeBody(body);
    if (large !== undefined && unsentBytes + large.length > maxUnsentBytes) {
      // Refused rather than queued: the reply is already built, and waiting would hold it.
      unsentRefusals++;
      sendError(ex, new AppError('UNAVAILABLE', 'Too many replies are waiting for slow clients; retry shortly', {
        headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
      }));
      return;
    }
    // Nothing may touch `res` after end().
    ex.done = true;
    ex.settle();
    // Shutting down: end(body, true) sends `Connection: close` and closes the connection
    // after this answer, so a keep-alive client sends its next request elsewhere.
    const draining = closed;
    let header = headPrefix(status, contentType, extra !== undefined && setsCacheControl(extra)) + ex.req.reqId;
    if (extra !== undefined) for (let i = 0; i < extra.length; i++) header += `\r\n${extra[i]![0]}: ${extra[i]![1]}`;
    if (large !== undefined) {
      // tryEnd cannot close the connection after the body: say so, and the client closes it.
      if (close || draining) header += '\r\nConnection: close';
      const bytes = large;
      wStream = (res) => streamReply(res, bytes);
    }
    wRes = ex.res;
    wHeader = header;
    wBody = body;
    wHead = ex.head;
    wClose = close || draining;
    try {
      ex.res.cork(corkedWrite);
    } catch (err) {
      // Only reachable if uWS discarded the response under us; nothing left to answer.
      logger.error({ reqId: ex.req.reqId, err: errInfo(err) }, 'response write failed');
    } finally {
      wRes = undefined;
      wHeader = '';
      wBody = undefined;
      wStream = undefined;
    }
    if (report !== undefined) report(ex, status);
  }

  function sendError(ex: Exchange, err: unknown, close = false): void {
    const req = ex.req;
    const mapped = toErrorBody(err, req.reqId);
    // Logged even when the client is gone: a 5xx is a bug or an outage either way.
    // Never the body or headers (they carry credentials and secret values).
    if (mapped.status >= 500) {
      logger.error(
        // The route template, not the path: paths name projects, folders and keys.
        { reqId: req.reqId, method: req.method, route: req.route ?? null, status: mapped.status, err: errInfo(err) },
        'request failed',
      );
    }
    if (ex.done) return;
    mapped.body.message = printableMessage(mapped.body.message);
    let text: string;
    try {
      text = JSON.stringify(mapped.body);
    } catch {
      // details that cannot be serialised: drop them rather than fail the error path
      const { details: _details, ...rest } = mapped.body;
      text = JSON.stringify(rest);
    }
    let extra: [string, string][] | undefined;
    try {
      extra = replyHeaders(mapped.headers, false);
    } catch {
      extra = undefined;
    }
    write(ex, mapped.status, JSON_CONTENT_TYPE, extra, text, close);
  }

  /**
   * An error reply that also closes the connection, sent on the next macrotask. uWS keeps
   * parsing whatever is already buffered on the socket after end(body, true) and would
   * serve a request pipelined behind this one; while our response is still pending, it
   * instead drops the connection when another request arrives. So nothing queued behind
   * a refused request is ever served.
   */
  function refuseAndClose(ex: Exchange, err: AppError): void {
    setImmediate(() => sendError(ex, err, true));
  }

  const maxStreamBufferBytes = opts.maxStreamBufferBytes ?? 256 * 1024;
  /** Every open streaming response, ended by close(). */
  const streams = new Set<ReplyStream>();

  /**
   * Writes the head of a streaming response and hands the stream to `open`. uWS sends
   * `Transfer-Encoding: chunked` on the first write; a write it could not send at once is
   * kept by uWS, and what comes after it is queued here until onWritable, up to the bound.
   */
  function startStream(ex: Exchange, status: number, extra: [string, string][] | undefined, open: (s: ReplyStream) => void): void {
    const res = ex.res;
    let header = headPrefix(status, undefined, extra !== undefined && setsCacheControl(extra)) + ex.req.reqId;
    if (extra !== undefined) for (let i = 0; i < extra.length; i++) header += `\r\n${extra[i]![0]}: ${extra[i]![1]}`;
    ex.settle();
    if (report !== undefined) report(ex, status);
    const queue: string[] = [];
    let queued = 0;
    let blocked = false;
    let closed = false;
    const closers: Array<() => void> = [];
    const finish = () => {
      if (closed) return;
      closed = true;
      ex.done = true;
      streams.delete(stream);
      queue.length = 0;
      queued = 0;
      for (const c of closers.splice(0)) {
        try {
          c();
        } catch (err) {
          logger.error({ reqId: ex.req.reqId, err: errInfo(err) }, 'stream close handler failed');
        }
      }
    };
    ex.gone = finish;
    const send = (chunk: string): boolean => {
      let ok = false;
      res.cork(() => {
        ok = res.write(chunk);
      });
      return ok;
    };
    const stream: ReplyStream = {
      write(chunk) {
        if (closed || chunk.length === 0) return !closed;
        if (blocked) {
          queue.push(chunk);
          queued += Buffer.byteLength(chunk);
          if (queued > maxStreamBufferBytes) {
            // Too slow a reader: never unbounded memory.
            finish();
            res.close();
            return false;
          }
          return true;
        }
        if (!send(chunk)) blocked = true;
        return true;
      },
      end() {
        if (closed) return;
        finish();
        res.cork(() => res.end('', true));
      },
      get closed() {
        return closed;
      },
      get buffered() {
        return queued;
      },
      onClose(cb) {
        if (closed) cb();
        else closers.push(cb);
      },
    };
    res.onWritable(() => {
      if (closed) return true;
      while (queue.length > 0) {
        const chunk = queue.shift()!;
        queued -= Buffer.byteLength(chunk);
        if (!send(chunk)) return true;
      }
      blocked = false;
      return true;
    });
    streams.add(stream);
    // The head goes out with the stream's first chunk (the callback writes one at once).
    res.cork(() => res.writeStatus(header));
    try {
      open(stream);
    } catch (err) {
      logger.error({ reqId: ex.req.reqId, err: errInfo(err) }, 'stream open failed');
      stream.end();
    }
  }

  function sendReply(ex: Exchange, reply: HttpReply): void {
    if (ex.done) return;
    try {
      if (typeof reply !== 'object' || reply === null) throw new Error('Handler returned no reply object');
      const status = reply.status ?? 200;
      if (!Number.isInteger(status) || status < 200 || status > 599) throw new Error(`Invalid reply status ${status}`);
      const raw = reply.raw === true;
      const extra = replyHeaders(reply.headers, raw);
      if (reply.stream !== undefined) {
        startStream(ex, status, extra, reply.stream);
        return;
      }
      const value = reply.body;
      let body: string | Buffer | undefined;
      let contentType: string | undefined;
      if (NO_BODY_STATUS.has(status)) {
        body = undefined;
      } else if (raw) {
        if (typeof value !== 'string' && !Buffer.isBuffer(value)) throw new Error('raw reply body must be a string or Buffer');
        body = value;
        // Default to JSON unless the handler named its own type.
        if (extra === undefined || !extra.some((h) => h[0].toLowerCase() === 'content-type')) contentType = JSON_CONTENT_TYPE;
      } else if (value === undefined) {
        body = '';
      } else {
        body = JSON.stringify(value);
        contentType = JSON_CONTENT_TYPE;
      }
      write(ex, status, contentType, extra, body, false);
    } catch (err) {
      sendError(ex, err);
    }
  }

  function dispatch(ex: Exchange, handler: Handler): void {
    if (deadlineMs !== undefined) {
      ex.timer = setTimeout(() => {
        ex.timer = undefined;
        sendError(ex, new AppError('UNAVAILABLE', `The request did not complete within ${deadlineMs} ms; retry shortly`, {
          headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        }));
      }, deadlineMs);
    }
    let out: Promise<HttpReply> | HttpReply;
    try {
      out = handler(ex.req);
    } catch (err) {
      sendError(ex, err);
      return;
    }
    if (typeof (out as Promise<HttpReply> | undefined)?.then === 'function') {
      (out as Promise<HttpReply>).then(
        (reply) => sendReply(ex, reply),
        (err: unknown) => sendError(ex, err),
      );
    } else {
      sendReply(ex, out as HttpReply);
    }
  }

  // -- reading ---------------------------------------------------------------------------

  /**
   * Everything synchronous on the uWS request (which is invalid once this returns):
   * header guard, copy, params. Returns the exchange, or undefined when already answered.
   */
  function begin(res: UwsResponse, req: UwsRequest, method: Method, names: readonly string[] | null, head = false): Exchange | undefined {
    const guard = guardHeaders(req);
    if (guard === Guard.Close) {
      res.close();
      return undefined;
    }
    const headers = hHeaders;
    const contentLength = hContentLength;
    const path = req.getUrl();
    const readAddress = (): string => Buffer.from(res.getRemoteAddressAsText()).toString();
    const request = new PlainRequest(
      newReqId(),
      method,
      path,
      req.getQuery() ?? '',
      headers,
      // Read later, a GET's address is unknown ('') once it is answered or abandoned: only
      // reads wait (see readAddressOnArrival), and they write no audit entry.
      readAddressOnArrival || method !== 'GET' ? readAddress() : (): string => (ex.done ? '' : readAddress()),
    );
    inFlight++;
    const ex = new Exchange(res, request, settle, report);
    ex.head = head;
    res.onAborted(ex.onAborted);

    if (guard === Guard.Chunked) {
      refuseAndClose(ex, new AppError('LENGTH_REQUIRED', 'Chunked request bodies are not accepted; send Content-Length'));
      return undefined;
    }
    if (guard === Guard.Duplicate) {
      sendError(ex, new AppError('BAD_REQUEST', `Duplicate ${hDuplicate} header`));
      return undefined;
    }

    if (names !== null) {
      const params = request.params;
      for (let i = 0; i < names.length; i++) {
        const value = req.getParameter(i) ?? '';
        if (value.indexOf('%') === -1) {
          params[names[i]!] = value;
        } else {
          try {
            params[names[i]!] = decodeURIComponent(value);
          } catch {
            sendError(ex, new AppError('BAD_REQUEST', 'Malformed percent-encoding in URL'));
            return undefined;
          }
        }
      }
    }

    if (contentLength !== undefined) {
      const length = parseContentLength(contentLength);
      if (length < 0) {
        // Framing we cannot agree on with uWS's parser.
        ex.done = true;
        ex.settle();
        res.close();
        return undefined;
      }
      if (length > maxBodyBytes) {
        refuseAndClose(ex, new AppError('PAYLOAD_TOO_LARGE', `Request body is larger than ${maxBodyBytes} bytes`));
        return undefined;
      }
      ex.bodyLength = length;
    }
    return ex;
  }

  /**
   * Streams a Content-Length body (already checked against the cap), then dispatches.
   * Memory follows the bytes actually received, not the declared length, so idle
   * connections that announce a large body cost nothing.
   */
  function readBody(ex: Exchange, handler: Handler): void {
    const expected = ex.bodyLength;
    let chunks: Buffer[] | undefined;
    let received = 0;
    ex.res.onData((chunk, isLast) => {
      if (ex.done) return;
      const n = chunk.byteLength;
      if (received + n > expected) {
        // Unreachable with uWS's Content-Length framing; never read past the cap anyway.
        ex.done = true;
        ex.settle();
        ex.res.close();
        return;
      }
      received += n;
      // The chunk is only valid during this callback: copy it now.
      const copy = ownedCopy(new Uint8Array(chunk));
      if (!isLast) {
        (chunks ??= []).push(copy);
        return;
      }
      if (received !== expected) {
        ex.done = true;
        ex.settle();
        ex.res.close();
        return;
      }
      if (chunks === undefined) {
        ex.req.body = copy;
      } else {
        chunks.push(copy);
        const body = Buffer.allocUnsafeSlow(received);
        let at = 0;
        for (const c of chunks) {
          body.set(c, at);
          at += c.length;
        }
        ex.req.body = body;
      }
      dispatch(ex, handler);
    });
  }

  function route(method: Method, pattern: string, handler: Handler): void {
    const names = paramNames(pattern);
    const namesOrNull = names.length > 0 ? names : null;
    const onRequest = (res: UwsResponse, req: UwsRequest) => {
      const ex = begin(res, req, method, namesOrNull);
      if (ex === undefined) return;
      if (ex.bodyLength > 0) readBody(ex, handler);
      else dispatch(ex, handler);
    };
    // Every GET route answers HEAD too: the handler runs as for GET (it sees method
    // GET) and only the body is left out, so status and headers are the GET's.
    const onHead = (res: UwsResponse, req: UwsRequest) => {
      const ex = begin(res, req, 'GET', namesOrNull, true);
      if (ex === undefined) return;
      if (ex.bodyLength > 0) readBody(ex, handler);
      else dispatch(ex, handler);
    };
    // Infisical's server ignores one trailing slash (`infisical proxy` logs in at
    // `…/login/`), so each pattern is also declared with one. uWS matches an empty last
    // segment to no `:param`, and static segments before parameters, so `/raw/` never
    // reaches `/raw/:secretName` with an empty name.
    for (const p of pattern === '/' ? [pattern] : [pattern, `${pattern}/`]) {
      declare((a) => {
        a[UWS_METHOD[method]](p, onRequest);
        if (method === 'GET') a.head(p, onHead);
      });
    }
  }

  // Fallback for every unmatched method/path. The guard runs here too: a smuggled
  // request must not reach any handler, including this one.
  const fallback = (res: UwsResponse, req: UwsRequest) => {
    const sent = req.getCaseSensitiveMethod().toUpperCase();
    // An unmatched HEAD gets what the same GET would get, without the body.
    const head = sent === 'HEAD';
    const ex = begin(res, req, (head ? 'GET' : sent) as Method, null, head);
    if (ex === undefined) return;
    const handler = onNotFound ?? notFound;
    if (ex.bodyLength > 0) readBody(ex, handler);
    else dispatch(ex, handler);
  };
  declare((a) => a.any('/*', fallback));

  const router: Router = {
    get: (pattern, handler) => route('GET', pattern, handler),
    post: (pattern, handler) => route('POST', pattern, handler),
    patch: (pattern, handler) => route('PATCH', pattern, handler),
    put: (pattern, handler) => route('PUT', pattern, handler),
    delete: (pattern, handler) => route('DELETE', pattern, handler),
  };

  return {
    router,
    listen(port: number, host?: string): Promise<number> {
      return new Promise((resolve, reject) => {
        if (closed || listenSocket !== undefined) {
          reject(new Error(closed ? 'HTTP server is closed' : 'HTTP server is already listening'));
          return;
        }
        const onListen = (socket: us_listen_socket | false) => {
          if (socket === false) {
            reject(new ListenError(`cannot listen on ${host ?? '*'}:${port}: the port is in use by another process (or not permitted)`));
            return;
          }
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket as unknown as us_socket));
        };
        // Exclusive: without it uSockets sets SO_REUSEPORT and a second instance on the
        // same port silently gets half of the connections.
        const listenExclusive = app.listen as unknown as (host: string, port: number, options: number, cb: typeof onListen) => void;
        listenExclusive.call(app, host ?? '0.0.0.0', port, LIBUS_LISTEN_EXCLUSIVE_PORT, onListen);
      });
    },
    get unsentBytes() {
      return unsentBytes;
    },
    get slowClientCloses() {
      return slowClientCloses;
    },
    get unsentRefusals() {
      return unsentRefusals;
    },
    serveCertificate(names: readonly string[], files: TlsFiles): void {
      if (opts.tls === undefined) throw new Error('not serving TLS');
      for (const n of serverNames) app.removeServerName(n);
      serverNames = [];
      for (const n of names) {
        app.addServerName(n, uwsTlsOptions(files) as AppOptions);
        // Routes declared from here on go to this name's router.
        app.domain(n);
        for (const d of declarations) d(app);
      }
      serverNames = [...names];
    },
    get inFlight() {
      return inFlight;
    },
    async drain(timeoutMs: number, quietMs = DRAIN_QUIET_MS): Promise<boolean> {
      const until = performance.now() + timeoutMs;
      // Done once nothing has been in flight for quietMs: a request already on its way on
      // a kept-alive connection when the last answer went out is received and answered.
      for (;;) {
        const left = until - performance.now();
        if (left <= 0) return inFlight === 0;
        if (inFlight > 0) {
          const idleNow = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => {
              idle = idle.filter((w) => w !== done);
              resolve(false);
            }, left);
            const done = () => {
              clearTimeout(timer);
              resolve(true);
            };
            idle.push(done);
          });
          if (!idleNow) return false;
        }
        await new Promise((r) => setTimeout(r, Math.min(quietMs, Math.max(0, until - performance.now()))));
        if (inFlight === 0) return true;
      }
    },
    close(force = false): void {
      closed = true;
      // Open streams end now (their clients reconnect elsewhere with Last-Event-ID).
      for (const s of [...streams]) s.end();
      if (listenSocket !== undefined) {
        uws.us_listen_socket_close(listenSocket);
        listenSocket = undefined;
      }
      // TemplatedApp.close() exists in this binary (closes every socket of the app) but
      // is missing from the package's typings.
      if (force) (app as unknown as { close(): void }).close();
    },
  };
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_ALL = /[\u0000-\u001f\u007f-\u009f]/g;
/** Longest error message sent; messages quote client input, which routes bound anyway. */
export const MAX_MESSAGE_CHARS = 1024;

/**
 * The last line of defence for messages that quote what a client sent: control
 * characters are shown escaped (a terminal or log viewer reading them gets text, not
 * commands), and an over-long message is cut.
 */
export function printableMessage(message: string): string {
  let out = CONTROL.test(message) ? message.replace(CONTROL_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : message;
  if (out.length > MAX_MESSAGE_CHARS) {
    let end = MAX_MESSAGE_CHARS - 1;
    // Never split a surrogate pair.
    if (/[\ud800-\udbff]/.test(out[end - 1]!)) end--;
    out = `${out.slice(0, end)}…`;
  }
  return out;
}

function notFound(req: HttpRequest): never {
  throw new AppError('NOT_FOUND', `Route ${req.method}:${req.path} not found`);
}

function errInfo(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { type: typeof err };
}
