// Infisical's event subscriptions: POST /api/v1/events/subscribe/project-events answers a
// server-sent event stream of the project's secret changes (what the Kubernetes operator's
// `instantUpdates` and `infisical proxy` listen to). Events come from the event table
// (server/domain/eventHub.ts): `id:` is the project's event id, so a client that reconnects
// with Last-Event-ID gets what it missed, in order (or `resync` when that was pruned).
//
// Each event reaches a stream only if one of its registrations matches (type, environment,
// path, or a glob) and the caller may describe secrets there (its role as re-checked: every
// EVENTS_RECHECK_MS and at once on any membership, role, token or session change; a
// caller no longer allowed gets an `error` event and the stream ends).
import { z } from 'zod';
import type { EventRow, EventType } from '../../../storage/events.js';
import { EVENT_TYPES } from '../../../storage/events.js';
import { maySecrets, type Actor, type ProjectAccess } from '../../domain/access.js';
import { topics } from '../../domain/caches.js';
import { globMatch } from '../../domain/glob.js';
import { normaliseSecretPath } from '../../domain/paths.js';
import { AppError, ERROR_TABLE } from '../../errors.js';
import type { ReplyStream } from '../../http/types.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';

export const SSE_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
} as const;

const registration = z.object({
  event: z.enum(EVENT_TYPES, { error: `event must be one of ${EVENT_TYPES.join(', ')}` }),
  conditions: z
    .object({
      environmentSlug: z.string().min(1).max(64),
      secretPath: z.string().min(1).max(1024).optional(),
    })
    .strict()
    .optional(),
});
const body = z.object({
  projectId: z.string().min(1).max(64),
  register: z.array(registration.strict()).min(1, 'register must hold 1 to 10 entries').max(10, 'register must hold 1 to 10 entries'),
});

type Registration = { event: EventType; environment?: string; path?: string };

/** One SSE frame; `data` is JSON on one line. */
export function frame(f: { id?: number; event: string; data?: unknown }): string {
  let out = '';
  if (f.id !== undefined) out += `id: ${f.id}\n`;
  out += `event: ${f.event}\n`;
  if (f.data !== undefined) out += `data: ${JSON.stringify(f.data)}\n`;
  return `${out}\n`;
}

/** Infisical's data of an event: one payload entry per key (both key spellings), or the folder for an import mutation. */
export function eventData(r: EventRow) {
  const payload =
    r.type === 'secret:import-mutation'
      ? { environment: r.environment, secretPath: r.secretPath }
      : r.secretKeys.map((k) => ({ environment: r.environment, secretPath: r.secretPath, secretKey: k, secretKeys: k }));
  return { type: 'secret-manager', data: { eventType: r.type, payload } };
}

/**
 * A registration's path: a glob (`*`, `**`, `?`) matches as a glob; a plain path matches
 * itself and every folder below it, as Infisical's stream does (its check is a prefix one;
 * here a prefix at a folder boundary, so `/app` is not `/apps`).
 */
function pathMatches(path: string, pattern: string): boolean {
  if (/[*?]/.test(pattern)) return globMatch(path, pattern);
  return pattern === '/' || path === pattern || path.startsWith(`${pattern}/`);
}

function matches(regs: readonly Registration[], r: EventRow): boolean {
  return regs.some((g) => g.event === r.type && (g.environment === undefined || g.environment === r.environment) && (g.path === undefined || pathMatches(r.secretPath, g.path)));
}

/**
 * A row's frame, serialised once however many subscribers receive it (the hub hands every
 * sink of a project the same row objects): 500 subscribers cost one JSON.stringify, not 500.
 */
const framed = new WeakMap<EventRow, string>();
function rowFrame(r: EventRow): string {
  let f = framed.get(r);
  if (f === undefined) framed.set(r, (f = frame({ id: r.id, event: r.type, data: eventData(r) })));
  return f;
}

const actorKey = (a: Actor) => (a.kind === 'identity' ? `identity:${a.identityId}` : `user:${a.userId}`);

/** Topics whose change may take a subscriber's right away: every stream re-checks. */
const RECHECK_TOPICS: ReadonlySet<string> = new Set([topics.membership, topics.projectRoles, topics.project, topics.identity, topics.accessToken, topics.userSession]);

export function registerEventRoutes(api: Api, svc: Services) {
  const cfg = svc.eventStreams;
  const perActor = new Map<string, number>();
  let total = 0;
  const rechecks = new Set<() => void>();
  let recheckQueued = false;
  svc.bus.subscribe((topic) => {
    if (!RECHECK_TOPICS.has(topic) || recheckQueued || rechecks.size === 0) return;
    recheckQueued = true;
    // After every cache has dropped what the change made stale.
    setImmediate(() => {
      recheckQueued = false;
      for (const r of rechecks) r();
    });
  });

  api.post(
    '/api/v1/events/subscribe/project-events',
    { caller: 'any', summary: 'Subscribe to the project\'s secret change events (server-sent events)', body, alsoProduces: ['text/event-stream'] },
    async ({ actor, body: input, req, origin }) => {
      const projectRef = { id: input.projectId };
      let { access } = await svc.access.authorize(actor, projectRef, 'secrets:read');
      const regs: Registration[] = input.register.map((r) => ({
        event: r.event,
        ...(r.conditions ? { environment: r.conditions.environmentSlug, path: r.conditions.secretPath === undefined ? '/' : r.conditions.secretPath } : {}),
      }));
      for (const g of regs) {
        if (g.path !== undefined && !/[*?]/.test(g.path)) g.path = normaliseSecretPath(g.path);
        // A registration for one place the caller may not see is refused, as Infisical does.
        if (g.environment !== undefined && g.path !== undefined && !/[*?]/.test(g.path) && !maySecrets(access, 'describe', g.environment, g.path)) {
          throw new AppError('FORBIDDEN', 'You are not allowed to subscribe to events of this environment and path');
        }
      }
      const lastHeader = req.headers['last-event-id'];
      let lastEventId: number | undefined;
      if (lastHeader !== undefined && lastHeader.trim() !== '') {
        if (!/^\d{1,15}$/.test(lastHeader.trim())) throw new AppError('BAD_REQUEST', 'Last-Event-ID must be an event id (a non-negative integer)');
        lastEventId = Number(lastHeader.trim());
      }
      const key = actorKey(actor);
      if (total >= cfg.maxConnections) {
        throw new AppError('RATE_LIMITED', `Too many event subscriptions on this server (at most ${cfg.maxConnections}); retry later or on another replica`);
      }
      if ((perActor.get(key) ?? 0) >= cfg.maxConnectionsPerActor) {
        throw new AppError('RATE_LIMITED', `Too many event subscriptions for this caller (at most ${cfg.maxConnectionsPerActor} at a time); close one first`);
      }
      total++;
      perActor.set(key, (perActor.get(key) ?? 0) + 1);
      const release = () => {
        total--;
        const n = (perActor.get(key) ?? 1) - 1;
        if (n <= 0) perActor.delete(key);
        else perActor.set(key, n);
      };

      const open = (s: ReplyStream) => {
        let unsubscribe: (() => void) | undefined;
        let ended = false;
        const stop = (error?: string) => {
          if (ended) return;
          ended = true;
          if (error !== undefined) s.write(frame({ event: 'error', data: { message: error } }));
          s.end();
        };
        const allowed = (r: EventRow, a: ProjectAccess) => matches(regs, r) && maySecrets(a, 'describe', r.environment, r.secretPath);
        const sink = {
          projectId: input.projectId.toLowerCase(),
          cursor: 0,
          deliver(rows: readonly EventRow[]) {
            for (const r of rows) if (allowed(r, access) && !s.write(rowFrame(r))) return;
          },
          resync() {
            s.write(frame({ id: sink.cursor, event: 'resync', data: { message: 'Events you missed are no longer kept; read the secrets again' } }));
          },
        };
        const recheck = () => {
          if (ended) return;
          void (async () => {
            const who = await svc.auth.actor(req, origin);
            if (actorKey(who) !== key) throw new AppError('FORBIDDEN', 'The caller changed');
            access = (await svc.access.authorize(who, projectRef, 'secrets:read')).access;
          })().catch((err: unknown) => {
            // Gone (token revoked, member removed, project deleted) or refused: the stream ends.
            // A fault (database down) keeps the stream; the next re-check decides.
            if (err instanceof AppError && ERROR_TABLE[err.code].status < 500) stop('Permission denied or revoked');
          });
        };
        const ping = setInterval(() => s.write(frame({ event: 'ping' })), cfg.pingMs);
        const every = setInterval(recheck, cfg.recheckMs);
        rechecks.add(recheck);
        s.onClose(() => {
          ended = true;
          clearInterval(ping);
          clearInterval(every);
          rechecks.delete(recheck);
          unsubscribe?.();
          release();
        });
        // An SSE comment: sends the head now (clients see the stream open), ignored by parsers.
        s.write(': connected\n\n');
        svc.events.subscribe(sink, lastEventId).then(
          (un) => {
            if (s.closed) un();
            else unsubscribe = un;
          },
          () => stop('Events are unavailable right now; reconnect with Last-Event-ID'),
        );
      };
      return { status: 200, raw: true, headers: { ...SSE_HEADERS }, stream: open, body: '' };
    },
  );
}
