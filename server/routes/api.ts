// Route declarations: each route says who may call it and what it reads; authentication
// and input parsing happen here, once, before the handler runs. A handler receives the
// actor and the parsed input, calls the domain, and shapes the answer. The declared
// routes are kept in a table (the guard test and the API description read it).
//
// Order of the checks, for every route: who (401/403), then the path parameters, the
// query and the body (422 for what the schemas refuse).
import { z } from 'zod';
import type { Authenticator } from '../auth/authenticate.js';
import type { Actor } from '../domain/access.js';
import type { Origin } from '../domain/pipeline.js';
import type { UserActor } from '../domain/users.js';
import { AppError } from '../errors.js';
import { parseJsonBody } from '../http/body.js';
import { clientAddress, ipMatcher, type IpRange } from '../http/clientAddress.js';
import type { HttpReply, HttpRequest, Method, Router } from '../http/types.js';
import { bodyAndQuery, parse, queryObject } from './input.js';

/**
 * Who may call a route: anyone (`none`: login, first visit, health), any authenticated
 * caller (`any`: machine identities and people; the domain decides what each may do),
 * or people only (`user`).
 */
export type Caller = 'none' | 'any' | 'user';

type ActorOf<C extends Caller> = C extends 'none' ? undefined : C extends 'user' ? UserActor : Actor;

/** `:name` segments of a path pattern, as an object of strings. */
type ParamNames<P extends string> = P extends `${string}:${infer Name}/${infer Rest}`
  ? Name | ParamNames<`/${Rest}`>
  : P extends `${string}:${infer Name}`
    ? Name
    : never;
export type PathParams<P extends string> = { [K in ParamNames<P>]: string };

type Out<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

export interface RouteInput<C extends Caller, P extends string, Q, B, PS = undefined> {
  actor: ActorOf<C>;
  /**
   * URL-decoded path parameters: as parsed by the route's `params` schema, or as sent (the
   * domain validates ids: a malformed one is a 404).
   */
  params: PS extends z.ZodType ? z.output<PS> : PathParams<P>;
  query: Out<Q>;
  body: Out<B>;
  /** Where the request came from, for the audit trail. */
  origin: Origin;
  /** The request itself, for what only a handler needs (cookies' Secure flag). */
  req: HttpRequest;
}

/**
 * A request's client address, worked out on first use. A class, not an object literal
 * with a getter: V8 gives each such literal a hidden class of its own (the getter is part
 * of it), kept in the old generation, which held every request's objects until the next
 * full collection (promotion ~35 MB/s on the hot path; paced p99 tens of ms).
 */
class RequestOrigin implements Origin {
  #ip: string | undefined;
  readonly #req: HttpRequest;
  readonly #isTrustedProxy: ReturnType<typeof ipMatcher>;
  constructor(req: HttpRequest, isTrustedProxy: ReturnType<typeof ipMatcher>) {
    this.#req = req;
    this.#isTrustedProxy = isTrustedProxy;
  }
  get reqId(): string {
    return this.#req.reqId;
  }
  get ip(): string | null {
    return (this.#ip ??= clientAddress(this.#req.remoteAddress, this.#req.headers['x-forwarded-for'], this.#isTrustedProxy)) || null;
  }
}

/** What a route declares besides its method, path and handler. */
export interface RouteOptions<C extends Caller, Q extends z.ZodType | undefined, B extends z.ZodType | undefined, PS extends z.ZodType | undefined> {
  caller: C;
  /** One line for the API description. */
  summary: string;
  /** For `caller: 'user'`: the refusal a machine identity gets (default 403). */
  refuseMachine?: () => AppError;
  /** Path parameters that need more than "a string" (a version number, a bounded slug). */
  params?: PS;
  query?: Q;
  /**
   * The JSON (or form) body; `bodyFrom: 'body+query'` also takes fields from the query
   * string (DELETE). An object schema is made strict here: a field the route does not
   * declare is a 422 naming it (a field accepted is applied, or refused; never ignored).
   * A POST / PATCH without a body schema refuses any field the same way.
   */
  body?: B;
  bodyFrom?: 'body' | 'body+query';
  /**
   * The exceptions, each for a stated reason: the Universal Auth login, whose contract
   * says to ignore unknown fields (CONTRACT.md "ignore organizationSlug and unknown
   * fields"), and logout, whose body is never read (ending a session must not fail).
   */
  unknownBodyFields?: 'ignore';
  /** The 2xx answer's JSON body, for the API description (and the contract test that checks answers against it). */
  response?: z.ZodType;
  /** Media types the route may answer with instead of JSON (e.g. `text/csv`). */
  alsoProduces?: string[];
  /**
   * GET only: remember the parsed query by its exact text (bounded), for the hot path's
   * repeated identical reads. The handler gets a frozen object it must not change.
   */
  cacheQuery?: boolean;
}

export type RouteHandler<C extends Caller, P extends string, Q, B, PS> = (input: RouteInput<C, P, Q, B, PS>) => Promise<HttpReply> | HttpReply;

/** What the route table keeps of each declaration. */
export interface DeclaredRoute {
  method: Method;
  path: string;
  caller: Caller;
  summary: string;
  params?: z.ZodType;
  query?: z.ZodType;
  body?: z.ZodType;
  response?: z.ZodType;
  alsoProduces?: string[];
}

type Declare = <
  C extends Caller,
  P extends string,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  PS extends z.ZodType | undefined = undefined,
>(
  path: P,
  options: RouteOptions<C, Q, B, PS>,
  handler: RouteHandler<C, P, Q, B, PS>,
) => void;

export interface Api {
  get: Declare;
  post: Declare;
  patch: Declare;
  delete: Declare;
  readonly routes: readonly DeclaredRoute[];
}

/** Parsed queries remembered per route (cacheQuery), and the longest query text kept. */
export const QUERY_CACHE_MAX = 256;
const QUERY_CACHE_MAX_CHARS = 2048;

function noBody(req: HttpRequest, check: boolean): Record<string, never> {
  if (check) refuseFields(parseJsonBody(req));
  return {};
}

const ROUTER_METHOD = { GET: 'get', POST: 'post', PATCH: 'patch', PUT: 'put', DELETE: 'delete' } as const satisfies Record<Method, keyof Router>;

export interface ApiOptions {
  /** TRUSTED_PROXIES: whose X-Forwarded-For names the client (default: nobody's). */
  trustedProxies?: readonly IpRange[];
}

/** An object schema as declared, made strict (nested objects are declared strict where they are). */
function strictBody(schema: z.ZodType): z.ZodType {
  return schema instanceof z.ZodObject ? schema.strict() : schema;
}

/** The top-level field names an object schema declares (the query fields a DELETE may carry). */
function declaredFields(schema: z.ZodType): ReadonlySet<string> | undefined {
  return schema instanceof z.ZodObject ? new Set(Object.keys(schema.shape)) : undefined;
}

/** A POST / PATCH that declares no body: any field sent is refused by name (`{}` and no body are fine). */
function refuseFields(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const keys = Object.keys(body);
  if (keys.length === 0) return;
  throw new AppError('VALIDATION', `Unrecognized key${keys.length > 1 ? 's' : ''}: ${keys.map((k) => JSON.stringify(k.slice(0, 64))).join(', ')}; this request takes no body fields`, {
    details: keys.map((k) => ({ path: k.slice(0, 64), message: 'not a field of this request' })),
  });
}

export function createApi(router: Router, auth: Pick<Authenticator, 'actor'>, opts: ApiOptions = {}): Api {
  const routes: DeclaredRoute[] = [];
  const isTrustedProxy = ipMatcher(opts.trustedProxies ?? []);
  const declare =
    (method: Method): Declare =>
    (path, options, handler) => {
      const { caller, summary, params, query, response, alsoProduces } = options;
      const body = options.body && options.unknownBodyFields !== 'ignore' ? strictBody(options.body) : options.body;
      const queryFields = options.bodyFrom === 'body+query' && body ? declaredFields(body) : undefined;
      const checkNoBody = !body && options.unknownBodyFields !== 'ignore' && (method === 'POST' || method === 'PATCH' || method === 'PUT');
      routes.push({ method, path, caller, summary, params, query, body, response, alsoProduces });
      const parsedQueries = query && options.cacheQuery === true && method === 'GET' ? new Map<string, unknown>() : undefined;
      const parseQuery = (req: HttpRequest): unknown => {
        if (!query) return {};
        const raw = req.rawQuery;
        if (parsedQueries === undefined || raw === undefined || raw.length > QUERY_CACHE_MAX_CHARS) return parse(query, queryObject(req.query));
        let parsed = parsedQueries.get(raw);
        if (parsed === undefined) {
          // Only what parses is kept: a refused query is parsed (and refused) every time.
          parsed = Object.freeze(parse(query, queryObject(req.query)));
          if (parsedQueries.size >= QUERY_CACHE_MAX) parsedQueries.delete(parsedQueries.keys().next().value!);
          parsedQueries.set(raw, parsed);
        }
        return parsed;
      };
      router[ROUTER_METHOD[method]](path, async (req) => {
        // For the request log and metrics: the template, never the path with its names.
        req.route = path;
        // One address per request, for the trusted-IP checks and the audit trail alike,
        // worked out when first asked: a cached read whose token admits every address
        // never asks (HttpServerOptions.readAddressOnArrival).
        const origin = new RequestOrigin(req, isTrustedProxy);
        let actor: Actor | undefined;
        if (caller !== 'none') {
          // A held machine token is a value (no promise, no turn of the microtask queue).
          const who = auth.actor(req, origin);
          actor = who instanceof Promise ? await who : who;
          req.actor = actor.kind === 'user' ? { kind: 'user', id: actor.userId } : { kind: 'identity', id: actor.identityId };
          if (caller === 'user' && actor.kind !== 'user') {
            throw options.refuseMachine?.() ?? new AppError('FORBIDDEN', 'You are not allowed to access this resource');
          }
        }
        const input = {
          actor,
          params: params ? parse(params, req.params) : req.params,
          query: parseQuery(req),
          body: body ? parse(body, options.bodyFrom === 'body+query' ? bodyAndQuery(req, queryFields) : parseJsonBody(req)) : noBody(req, checkNoBody),
          origin,
          req,
        };
        return handler(input as never);
      });
    };
  return { routes, get: declare('GET'), post: declare('POST'), patch: declare('PATCH'), delete: declare('DELETE') };
}
