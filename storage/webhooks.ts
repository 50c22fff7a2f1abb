// Webhooks (migration 0021): Infisical's webhooks, delivered from the event table. The URL
// and the signing key are sealed blobs under the row's own data key (crypto_keys purpose
// 'webhook'); only wrapped keys and ciphertext pass through here.
//
// Delivery (server/domain/webhookWorker.ts) claims due webhooks with FOR UPDATE SKIP
// LOCKED and a lease (lease_token, lease_until): two replicas never deliver for the same
// webhook at once, and every state change after a delivery names the lease it held, so a
// replica whose lease ran out writes nothing.
import type { Queryable } from './db.js';

export const WEBHOOK_TYPES = ['general', 'slack', 'microsoft-teams'] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

export interface WebhookRow {
  id: string;
  projectId: string;
  environmentId: string;
  environmentSlug: string;
  environmentName: string;
  secretPath: string;
  type: WebhookType;
  eventsFilter: string[];
  isDisabled: boolean;
  hasSecretKey: boolean;
  cursor: number;
  lastStatus: 'success' | 'failed' | null;
  lastError: string | null;
  lastHttpStatus: number | null;
  lastAttemptAt: Date | null;
  lastEventId: number | null;
  pendingEventId: number | null;
  pendingSince: Date | null;
  attempts: number;
  nextAttemptAt: Date | null;
  deadAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a delivery needs besides the row: the blobs, their wrapped key, the project's name and last event id. */
export interface ClaimedWebhook extends WebhookRow {
  dataKeyId: string;
  wrappedKey: Buffer;
  urlBlob: Buffer;
  keyBlob: Buffer | null;
  projectName: string;
  /** The project's last committed event id when claimed. */
  lastId: number;
  leaseToken: string;
}

export interface WebhookSealed {
  dataKeyId: string;
  urlBlob: Buffer;
  keyBlob: Buffer | null;
}

const COLUMNS = `w.id, w.project_id, w.environment_id, e.slug as environment_slug, e.name as environment_name, w.secret_path, w.type,
  w.events_filter, w.is_disabled, (w.key_blob is not null) as has_secret_key, w.cursor, w.last_status, w.last_error,
  w.last_http_status, w.last_attempt_at, w.last_event_id, w.pending_event_id, w.pending_since, w.attempts,
  w.next_attempt_at, w.dead_at, w.created_at, w.updated_at`;

type Raw = Omit<WebhookRow, 'cursor' | 'lastEventId' | 'pendingEventId' | 'eventsFilter'> & {
  cursor: string | number;
  lastEventId: string | number | null;
  pendingEventId: string | number | null;
  eventsFilter: unknown;
};

function row<R extends Raw>(r: R): Omit<R, keyof Raw> & WebhookRow {
  const filter = typeof r.eventsFilter === 'string' ? (JSON.parse(r.eventsFilter) as unknown) : r.eventsFilter;
  return {
    ...r,
    cursor: Number(r.cursor),
    lastEventId: r.lastEventId === null ? null : Number(r.lastEventId),
    pendingEventId: r.pendingEventId === null ? null : Number(r.pendingEventId),
    eventsFilter: Array.isArray(filter) ? filter.map(String) : [],
  };
}

/** How a delivery ended, as the worker records it (under its lease). */
export type DeliveryRecord =
  | { kind: 'skipped'; cursor: number }
  | { kind: 'success'; cursor: number; eventId: number; httpStatus: number }
  | {
      kind: 'failed';
      pendingEventId: number;
      attempts: number;
      pendingSince: Date;
      error: string;
      httpStatus: number | null;
      /** null: dead (retried past the period). */
      nextAttemptAt: Date | null;
    };

export function webhooksStore(sql: Queryable) {
  async function byId(id: string, opts: { forUpdate?: boolean } = {}): Promise<WebhookRow | undefined> {
    const [r] = opts.forUpdate
      ? await sql<Raw[]>`select ${sql.unsafe(COLUMNS)} from webhooks w join environments e on e.id = w.environment_id where w.id = ${id} for update of w`
      : await sql<Raw[]>`select ${sql.unsafe(COLUMNS)} from webhooks w join environments e on e.id = w.environment_id where w.id = ${id}`;
    return r ? row(r) : undefined;
  }

  return {
    byId,

    /** The project's webhooks, oldest first; optionally of one environment slug and one exact secretPath. */
    async ofProject(projectId: string, filter: { environment?: string; secretPath?: string } = {}): Promise<WebhookRow[]> {
      const rows = await sql<Raw[]>`select ${sql.unsafe(COLUMNS)} from webhooks w join environments e on e.id = w.environment_id
        where w.project_id = ${projectId}
          ${filter.environment === undefined ? sql`` : sql`and e.slug = ${filter.environment}`}
          ${filter.secretPath === undefined ? sql`` : sql`and w.secret_path = ${filter.secretPath}`}
        order by w.created_at, w.id`;
      return rows.map(row);
    },

    /** The sealed URL and key with their wrapped data key (a test delivery). */
    async sealed(id: string): Promise<(WebhookSealed & { wrappedKey: Buffer }) | undefined> {
      const [r] = await sql<(WebhookSealed & { wrappedKey: Buffer })[]>`select w.data_key_id, w.url_blob, w.key_blob, c.wrapped as wrapped_key
        from webhooks w join crypto_keys c on c.id = w.data_key_id where w.id = ${id}`;
      return r;
    },

    /** `sealed.dataKeyId` names a crypto_keys row inserted in the same transaction; the cursor starts at the project's last event. */
    async insert(w: { id: string; projectId: string; environmentId: string; secretPath: string; type: WebhookType; eventsFilter: string[] }, sealed: WebhookSealed): Promise<WebhookRow> {
      const [seq] = await sql<{ lastId: string }[]>`select last_id from project_event_seq where project_id = ${w.projectId}`;
      await sql`insert into webhooks (id, project_id, environment_id, secret_path, type, events_filter, data_key_id, url_blob, key_blob, cursor)
        values (${w.id}, ${w.projectId}, ${w.environmentId}, ${w.secretPath}, ${w.type}, ${JSON.stringify(w.eventsFilter)}::jsonb,
          ${sealed.dataKeyId}, ${sealed.urlBlob}, ${sealed.keyBlob}, ${Number(seq?.lastId ?? 0)})`;
      return (await byId(w.id))!;
    },

    /**
     * isDisabled and/or eventsFilter. Enabling (isDisabled false) also clears a dead
     * delivery: the webhook resumes from its cursor at once.
     */
    async update(id: string, change: { isDisabled?: boolean; eventsFilter?: string[] }): Promise<WebhookRow | undefined> {
      const enable = change.isDisabled === false;
      await sql`update webhooks set
          is_disabled = coalesce(${change.isDisabled ?? null}::boolean, is_disabled),
          events_filter = coalesce(${change.eventsFilter === undefined ? null : JSON.stringify(change.eventsFilter)}::jsonb, events_filter),
          dead_at = case when ${enable} then null else dead_at end,
          attempts = case when ${enable} and dead_at is not null then 0 else attempts end,
          pending_event_id = case when ${enable} and dead_at is not null then null else pending_event_id end,
          pending_since = case when ${enable} and dead_at is not null then null else pending_since end,
          next_attempt_at = case when ${enable} then null else next_attempt_at end,
          updated_at = now()
        where id = ${id}`;
      return byId(id);
    },

    async remove(id: string): Promise<boolean> {
      const rows = await sql`delete from webhooks where id = ${id} returning id`;
      return rows.length > 0;
    },

    /** A test delivery's outcome (Infisical's lastStatus / lastRunErrorMessage). */
    async recordTest(id: string, outcome: { ok: boolean; error: string | null; httpStatus: number | null }): Promise<WebhookRow | undefined> {
      await sql`update webhooks set last_status = ${outcome.ok ? 'success' : 'failed'}, last_error = ${outcome.error},
          last_http_status = ${outcome.httpStatus}, last_attempt_at = now(), updated_at = now()
        where id = ${id}`;
      return byId(id);
    },

    /** Whether any webhook is due (claim's condition, without locking): the idle poll is this one query. */
    async anyDue(): Promise<boolean> {
      const rows = await sql`select 1 from webhooks w join project_event_seq q on q.project_id = w.project_id
        where not w.is_disabled and w.dead_at is null and w.cursor < q.last_id
          and (w.next_attempt_at is null or w.next_attempt_at <= now())
          and (w.lease_until is null or w.lease_until < now())
        limit 1`;
      return rows.length > 0;
    },

    /**
     * Claims up to `limit` webhooks with events to deliver that are due (enabled, not dead,
     * not leased or their lease run out), for `leaseMs`; one transaction, rows another
     * replica is claiming skipped.
     */
    async claim(limit: number, leaseMs: number, token: string): Promise<ClaimedWebhook[]> {
      const ids = await sql<{ id: string }[]>`select w.id from webhooks w join project_event_seq q on q.project_id = w.project_id
        where not w.is_disabled and w.dead_at is null and w.cursor < q.last_id
          and (w.next_attempt_at is null or w.next_attempt_at <= now())
          and (w.lease_until is null or w.lease_until < now())
        order by coalesce(w.next_attempt_at, w.updated_at), w.id
        limit ${limit}
        for update of w skip locked`;
      if (ids.length === 0) return [];
      const list = ids.map((r) => r.id);
      await sql`update webhooks set lease_token = ${token}, lease_until = now() + make_interval(secs => ${leaseMs / 1000})
        where id in ${sql(list)}`;
      const rows = await sql<(Raw & Omit<ClaimedWebhook, keyof WebhookRow> & { lastId: string })[]>`select ${sql.unsafe(COLUMNS)},
          w.data_key_id, c.wrapped as wrapped_key, w.url_blob, w.key_blob, p.name as project_name, q.last_id, w.lease_token
        from webhooks w join environments e on e.id = w.environment_id join crypto_keys c on c.id = w.data_key_id
          join projects p on p.id = w.project_id join project_event_seq q on q.project_id = w.project_id
        where w.id in ${sql(list)} and w.lease_token = ${token}`;
      return rows.map((r) => ({ ...row(r), lastId: Number(r.lastId) }) as ClaimedWebhook);
    },

    /** Records how a delivery ended and releases the lease; false when the lease was lost (or the webhook deleted). */
    async settle(id: string, token: string, r: DeliveryRecord): Promise<boolean> {
      let rows;
      if (r.kind === 'skipped') {
        rows = await sql`update webhooks set cursor = greatest(cursor, ${r.cursor}), lease_token = null, lease_until = null
          where id = ${id} and lease_token = ${token} returning id`;
      } else if (r.kind === 'success') {
        rows = await sql`update webhooks set cursor = greatest(cursor, ${r.cursor}), last_status = 'success', last_error = null,
            last_http_status = ${r.httpStatus}, last_attempt_at = now(), last_event_id = ${r.eventId},
            pending_event_id = null, pending_since = null, attempts = 0, next_attempt_at = null,
            lease_token = null, lease_until = null
          where id = ${id} and lease_token = ${token} returning id`;
      } else {
        rows = await sql`update webhooks set last_status = 'failed', last_error = ${r.error}, last_http_status = ${r.httpStatus},
            last_attempt_at = now(), pending_event_id = ${r.pendingEventId}, pending_since = ${r.pendingSince}, attempts = ${r.attempts},
            next_attempt_at = ${r.nextAttemptAt}, dead_at = ${r.nextAttemptAt === null ? sql`now()` : sql`null`},
            lease_token = null, lease_until = null
          where id = ${id} and lease_token = ${token} returning id`;
      }
      return rows.length > 0;
    },

    /** Delivery state of every webhook, for the metrics (counts only). */
    async stateCounts(): Promise<{ state: string; n: number }[]> {
      const rows = await sql<{ state: string; n: string }[]>`select case
          when is_disabled then 'disabled' when dead_at is not null then 'dead'
          when pending_event_id is not null then 'retrying' else 'ok' end as state, count(*)::text as n
        from webhooks group by 1`;
      return rows.map((r) => ({ state: r.state, n: Number(r.n) }));
    },
  };
}
