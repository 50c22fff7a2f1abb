// The shape every route sees. uWS objects never leave server/http/: a handler gets a
// plain, already-copied request and returns a plain reply (or throws AppError).

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface HttpRequest {
  reqId: string;
  method: Method;
  /** The URL path as received (not decoded). */
  path: string;
  /** Route parameters, URL-decoded. */
  params: Record<string, string>;
  /** Query string; `URLSearchParams` decodes `+` and percent escapes. */
  query: URLSearchParams;
  /** The query string as received (after `?`, not decoded), when the front has it. */
  rawQuery?: string;
  /** Header names lower-case; a header that may not repeat is refused before this. */
  headers: Record<string, string>;
  /** Raw body bytes, already capped; empty Buffer when there was none. */
  body: Buffer;
  /** The socket's peer address ('' when unknown: see HttpServerOptions.readAddressOnArrival). */
  readonly remoteAddress: string;
  /** The declared route template (`/api/v3/secrets/raw/:secretName`), set by the route table; unset: no route matched. */
  route?: string;
  /** Who called, once authenticated (set by the route table), for the request log. */
  actor?: { kind: string; id: string };
}

/** What the front reports of every answered (or abandoned) request: no header, query or body. */
export interface RequestRecord {
  reqId: string;
  method: string;
  /** Route template, or undefined when no route matched (the UI, a 404). */
  route: string | undefined;
  /** The status sent; 499 when the client went away before an answer. */
  status: number;
  durationMs: number;
  actor: { kind: string; id: string } | undefined;
  /** The request, for clientAddress(). */
  req: HttpRequest;
}

/**
 * A response that stays open (server-sent events): the front writes the status and the
 * headers, then hands this to the reply's `stream` callback. Chunks go out at once; a
 * client that reads slower than they come has them queued up to the server's bound
 * (HttpServerOptions.maxStreamBufferBytes), and past it the connection is closed.
 */
export interface ReplyStream {
  /** Sends `chunk` (or queues it behind a slow client); false once the stream is closed (gone, ended, or over the bound). */
  write(chunk: string): boolean;
  /** Ends the response and closes its connection. Idempotent. */
  end(): void;
  readonly closed: boolean;
  /** Bytes queued behind a slow client right now. */
  readonly buffered: number;
  /** Called once when the stream closes, for whatever reason (client gone, end(), over the bound, server closed). */
  onClose(cb: () => void): void;
}

export interface HttpReply {
  /**
   * Keeps the response open: status and headers are written (no Content-Length; chunked),
   * the request stops counting as in flight, and `stream` gets the open stream.
   */
  stream?: (s: ReplyStream) => void;
  status?: number;
  /** JSON-serialisable value, or a pre-serialised JSON string/Buffer. */
  body?: unknown;
  /** Set when `body` is a string/Buffer that is already JSON or another type. */
  raw?: boolean;
  headers?: Record<string, string>;
}

export type Handler = (req: HttpRequest) => Promise<HttpReply> | HttpReply;

export interface Router {
  get(pattern: string, handler: Handler): void;
  post(pattern: string, handler: Handler): void;
  patch(pattern: string, handler: Handler): void;
  put(pattern: string, handler: Handler): void;
  delete(pattern: string, handler: Handler): void;
}
