// Webhook delivery from the event table (an outbox), one worker per replica.
//
// Each webhook keeps a cursor in its project's event ids (storage/webhooks.ts). The worker
// claims webhooks whose project has events after their cursor and that are due (enabled,
// not dead, no retry pending before now), in one transaction with FOR UPDATE SKIP LOCKED,
// and leases them (WEBHOOK_TIMEOUT_MS plus a margin): another replica (or this one) skips
// a leased webhook, and the outcome is written only under the lease it was claimed with.
// Works the same on PostgreSQL and the embedded PGlite database.
//
// One delivery per webhook at a time, in event id order (so: ordered per project). A
// delivery covers a run of events: from the first event the webhook wants (its
// environment, its path or glob, its events filter) through every later event it wants
// at the SAME environment and path, up to the first one it wants elsewhere. Infisical's
// payload names a folder, not keys ("something changed here, read it again"), so a burst
// to one folder is one delivery, and nothing is lost by collapsing. x-vault-event-id is
// the last event the delivery covers; a receiver that has seen an id ≥ it may drop it.
// Events the webhook does not want only move its cursor.
//
// A delivery that fails (network, timeout, refused target, non-2xx, redirect) is retried
// with exponential backoff and full jitter (WEBHOOK_RETRY_BASE_MS doubling up to
// WEBHOOK_RETRY_MAX_MS, each delay drawn from [d/2, d]) for WEBHOOK_RETRY_PERIOD_SECONDS
// from its first attempt, the last try at the period's end; then the webhook is dead:
// parked at that event (nothing after it is delivered out of order) until an admin
// enables it again (PATCH isDisabled:false), when it resumes from the same event.
// At-least-once: the cursor moves only after a 2xx (or when the events are not for it).
import { randomUUID } from 'node:crypto';
import type { Crypto } from '../../crypto/index.js';
import type { CacheBus } from '../../storage/cache.js';
import type { EventRow } from '../../storage/events.js';
import type { Store } from '../../storage/index.js';
import type { ClaimedWebhook } from '../../storage/webhooks.js';
import { EVENTS_TOPIC } from './events.js';
import {
  ATTEMPT_HEADER,
  EVENT_ID_HEADER,
  infisicalActorType,
  signedBody,
  wantsModified,
  webhookPathMatches,
  webhookPayload,
  type SendOutcome,
  type WebhooksDomain,
} from './webhooks.js';

/** Events read per delivery. */
export const PAGE = 500;
/** Webhooks claimed per round. */
export const CLAIM = 8;

export interface RetrySettings {
  periodMs: number;
  baseMs: number;
  maxMs: number;
}

/** The delay before retry number `attempts` (1 after the first failure): [d/2, d] with d = min(max, base·2^(attempts−1)). */
export function backoffMs(attempts: number, r: Pick<RetrySettings, 'baseMs' | 'maxMs'>, random: () => number = Math.random): number {
  const d = Math.min(r.maxMs, r.baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 40));
  return Math.round(d / 2 + random() * (d / 2));
}

export type DeliveryPlan =
  | { kind: 'skip'; cursor: number }
  | {
      kind: 'deliver';
      /** The first event of the delivery (a retry of the same delivery starts here again). */
      firstEventId: number;
      /** The last event the webhook wants that the delivery covers (x-vault-event-id). */
      eventId: number;
      /** Where the cursor goes once it is delivered. */
      cursor: number;
      environment: string;
      secretPath: string;
      last: EventRow;
    };

/** What the webhook does next with `rows` (events after its cursor, in id order, up to `lastId`). */
export function planDelivery(
  w: Pick<ClaimedWebhook, 'environmentSlug' | 'secretPath' | 'eventsFilter'>,
  rows: readonly EventRow[],
  lastId: number,
  page = PAGE,
): DeliveryPlan {
  const end = rows.length < page ? lastId : rows[rows.length - 1]!.id;
  const wanted = (r: EventRow) => r.environment === w.environmentSlug && webhookPathMatches(r.secretPath, w.secretPath) && wantsModified(w.eventsFilter);
  const first = rows.findIndex(wanted);
  if (first < 0) return { kind: 'skip', cursor: end };
  const m = rows[first]!;
  let last = m;
  for (let j = first + 1; j < rows.length; j++) {
    const r = rows[j]!;
    if (!wanted(r)) continue;
    if (r.environment !== m.environment || r.secretPath !== m.secretPath) {
      return { kind: 'deliver', firstEventId: m.id, eventId: last.id, cursor: r.id - 1, environment: m.environment, secretPath: m.secretPath, last };
    }
    last = r;
  }
  return { kind: 'deliver', firstEventId: m.id, eventId: last.id, cursor: end, environment: m.environment, secretPath: m.secretPath, last };
}

/** What a delivery came to (metrics, tests). `delayMs`: until the next try, for a retry. */
export interface DeliveryOutcome {
  webhookId: string;
  outcome: 'success' | 'retry' | 'dead' | 'skipped';
  eventId?: number;
  attempts?: number;
  delayMs?: number;
  seconds?: number;
}

export interface WebhookWorkerDeps {
  store: Pick<Store, 'transaction'> & { webhooks: Pick<Store['webhooks'], 'settle' | 'anyDue'>; events: Pick<Store['events'], 'after'> };
  crypto: Pick<Crypto, 'openMany'>;
  bus: Pick<CacheBus, 'subscribe' | 'onReset'>;
  webhooks: Pick<WebhooksDomain, 'open'>;
  send: (url: string, body: string, headers: Record<string, string>) => Promise<SendOutcome>;
  retry: RetrySettings;
  /** How long one delivery may take (the lease is longer). */
  timeoutMs: number;
  /** How often the worker looks for due deliveries besides being woken by events and its own retries. */
  pollMs: number;
  log?: (fields: Record<string, unknown>, msg: string) => void;
  onOutcome?: (o: DeliveryOutcome) => void;
  now?: () => number;
  random?: () => number;
}

export function webhookWorker(deps: WebhookWorkerDeps) {
  const { store, bus, log } = deps;
  const now = deps.now ?? Date.now;
  const leaseMs = deps.timeoutMs * 2 + 5_000;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let retryAt = Infinity;
  const watchers = new Set<(o: DeliveryOutcome) => void>();
  const emit = (o: DeliveryOutcome) => {
    deps.onOutcome?.(o);
    for (const w of watchers) w(o);
  };

  /** Wakes the worker at `at` (the earliest retry this replica knows of). */
  function wakeAt(at: number): void {
    if (stopped || at >= retryAt) return;
    clearTimeout(retryTimer);
    retryAt = at;
    retryTimer = setTimeout(() => {
      retryAt = Infinity;
      kick();
    }, Math.max(0, at - now()));
    retryTimer.unref();
  }

  async function deliver(w: ClaimedWebhook, token: string): Promise<void> {
    const rows = (await store.events.after(w.projectId, w.cursor, PAGE)).filter((r) => r.id <= w.lastId);
    const plan = planDelivery(w, rows, w.lastId);
    if (plan.kind === 'skip') {
      await store.webhooks.settle(w.id, token, { kind: 'skipped', cursor: plan.cursor });
      emit({ webhookId: w.id, outcome: 'skipped' });
      return;
    }
    const continuing = w.pendingEventId === plan.firstEventId && w.pendingSince !== null;
    const attempt = (continuing ? w.attempts : 0) + 1;
    const started = now();
    let outcome: SendOutcome;
    try {
      const opened = await deps.webhooks.open(w.id);
      if (!opened) return; // deleted meanwhile
      const payload = webhookPayload(w.type, 'secrets.modified', {
        projectId: w.projectId,
        projectName: w.projectName,
        environment: plan.environment,
        environmentName: w.environmentName,
        secretPath: plan.secretPath,
        changedBy: plan.last.actorId ?? undefined,
        changedByActorType: infisicalActorType(plan.last.actorType),
      });
      const signed = signedBody(payload, opened.secretKey, started);
      outcome = await deps.send(opened.url, signed.body, { ...signed.headers, [EVENT_ID_HEADER]: String(plan.eventId), [ATTEMPT_HEADER]: String(attempt) });
    } catch (err) {
      // Crypto could not open the URL or key: a failed attempt, retried like any other.
      const code = (err as { code?: unknown }).code;
      outcome = { ok: false, status: null, error: typeof code === 'string' ? `the webhook's URL or key could not be opened (${code})` : "the webhook's URL or key could not be opened" };
    }
    const seconds = (now() - started) / 1000;
    if (outcome.ok) {
      await store.webhooks.settle(w.id, token, { kind: 'success', cursor: plan.cursor, eventId: plan.eventId, httpStatus: outcome.status });
      emit({ webhookId: w.id, outcome: 'success', eventId: plan.eventId, attempts: attempt, seconds });
      return;
    }
    const pendingSince = continuing ? w.pendingSince! : new Date(started);
    const deadline = pendingSince.getTime() + deps.retry.periodMs;
    let nextAttemptAt: Date | null = null;
    let delayMs: number | undefined;
    if (now() < deadline) {
      delayMs = backoffMs(attempt, deps.retry, deps.random);
      nextAttemptAt = new Date(Math.min(now() + delayMs, deadline));
    }
    const kept = await store.webhooks.settle(w.id, token, {
      kind: 'failed',
      pendingEventId: plan.firstEventId,
      attempts: attempt,
      pendingSince,
      error: outcome.error,
      httpStatus: outcome.status,
      nextAttemptAt,
    });
    if (nextAttemptAt && kept) wakeAt(nextAttemptAt.getTime());
    if (!nextAttemptAt) log?.({ event: 'webhook-dead', webhookId: w.id, eventId: plan.firstEventId, attempts: attempt }, `webhook ${w.id}: delivery failed for the whole retry period; parked until the webhook is enabled again`);
    emit({ webhookId: w.id, outcome: nextAttemptAt ? 'retry' : 'dead', eventId: plan.eventId, attempts: attempt, delayMs, seconds });
  }

  async function round(): Promise<void> {
    do {
      again = false;
      if (!(await store.webhooks.anyDue())) break;
      const token = randomUUID();
      const claimed = await store.transaction((s) => s.webhooks.claim(CLAIM, leaseMs, token));
      await Promise.all(
        claimed.map((w) =>
          deliver(w, token).catch((err: unknown) => {
            log?.({ event: 'webhook-delivery', webhookId: w.id, err: (err as { code?: string }).code ?? (err as Error).message }, `webhook ${w.id}: recording a delivery failed; retried when its lease ends`);
          }),
        ),
      );
      if (claimed.length === CLAIM) again = true;
    } while (again && !stopped);
  }

  /** Runs a round now (or right after the one running). */
  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = round()
      .catch((err: unknown) => {
        log?.({ event: 'webhook-claim', err: (err as { code?: string }).code ?? (err as Error).message }, 'webhooks: looking for deliveries failed; retrying on the next poll');
      })
      .finally(() => {
        running = undefined;
      });
  }

  bus.subscribe((topic) => {
    if (topic === EVENTS_TOPIC) kick();
  });
  bus.onReset(kick);
  const poller = setInterval(kick, deps.pollMs);
  poller.unref();
  kick();

  return {
    kick,
    /** Calls `fn` after each delivery's outcome is recorded; returns the way to stop. */
    watch(fn: (o: DeliveryOutcome) => void): () => void {
      watchers.add(fn);
      return () => watchers.delete(fn);
    },
    async close(): Promise<void> {
      stopped = true;
      clearInterval(poller);
      clearTimeout(retryTimer);
      await running;
    },
  };
}
export type WebhookWorker = ReturnType<typeof webhookWorker>;
