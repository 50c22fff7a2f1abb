// Change events: per project, in id order, written in the transaction of the change they
// describe (server/domain/events.ts derives them from its audit entries). Names, paths and
// keys only: never a value, a value's hash, a token or a key.
import type { Queryable, Sql } from './db.js';

export const EVENT_TYPES = ['secret:create', 'secret:update', 'secret:delete', 'secret:import-mutation'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface EventDraft {
  type: EventType;
  environment: string;
  secretPath: string;
  secretKeys: string[];
}

export interface EventRow extends EventDraft {
  projectId: string;
  /** Per project: 1, 2, 3, … in commit order. */
  id: number;
  actorType: string;
  actorId: string | null;
  createdAt: Date;
}

/** Where a project's events stand: the last id given out and the highest id pruned. */
export interface EventCursor {
  lastId: number;
  prunedId: number;
}

type Raw = Omit<EventRow, 'id' | 'secretKeys'> & { id: string | number; secretKeys: unknown };

function row(r: Raw): EventRow {
  const keys = typeof r.secretKeys === 'string' ? (JSON.parse(r.secretKeys) as unknown) : r.secretKeys;
  return { ...r, id: Number(r.id), secretKeys: Array.isArray(keys) ? keys.map(String) : [] };
}

export function eventsStore(sql: Queryable) {
  return {
    /**
     * Appends `drafts` to the project's events, in order; returns the last id. Takes the
     * project's counter row lock until the transaction ends: ids commit in order.
     */
    async append(projectId: string, actor: { actorType: string; actorId: string | null }, drafts: readonly EventDraft[]): Promise<number> {
      const [seq] = await sql<{ lastId: string }[]>`insert into project_event_seq (project_id, last_id) values (${projectId}, ${drafts.length})
        on conflict (project_id) do update set last_id = project_event_seq.last_id + ${drafts.length}
        returning last_id`;
      const last = Number(seq!.lastId);
      let id = last - drafts.length;
      for (const d of drafts) {
        id++;
        await sql`insert into events (project_id, id, type, environment, secret_path, secret_keys, actor_type, actor_id)
          values (${projectId}, ${id}, ${d.type}, ${d.environment}, ${d.secretPath}, ${JSON.stringify(d.secretKeys)}::jsonb, ${actor.actorType}, ${actor.actorId})`;
      }
      return last;
    },

    /** Events of the project after `afterId`, in id order, at most `limit`. */
    async after(projectId: string, afterId: number, limit: number): Promise<EventRow[]> {
      const rows = await sql<Raw[]>`select project_id, id, type, environment, secret_path, secret_keys, actor_type, actor_id, created_at
        from events where project_id = ${projectId} and id > ${afterId} order by id limit ${limit}`;
      return rows.map(row);
    },

    async cursor(projectId: string): Promise<EventCursor> {
      const [c] = await sql<{ lastId: string; prunedId: string }[]>`select last_id, pruned_id from project_event_seq where project_id = ${projectId}`;
      return c ? { lastId: Number(c.lastId), prunedId: Number(c.prunedId) } : { lastId: 0, prunedId: 0 };
    },

    /** Every secret key in the environment at `path` and below (a folder moved), grouped by folder path. */
    /**
     * The folders that import any of `places` (by environment slug and path), directly or
     * through other imports, in the project: where an answer with imports changes too.
     * The places themselves are not in the result.
     */
    async importersOf(projectId: string, places: readonly { environment: string; secretPath: string }[]): Promise<{ environment: string; secretPath: string }[]> {
      if (places.length === 0) return [];
      return sql<{ environment: string; secretPath: string }[]>`with recursive touched(env_id, path) as (
          select e.id, p.path from unnest(${places.map((x) => x.environment)}::text[], ${places.map((x) => x.secretPath)}::text[]) as p(slug, path)
            join environments e on e.slug = p.slug and e.project_id = ${projectId}
          union
          select f.environment_id, f.path from touched t
            join secret_imports si on si.import_env_id = t.env_id and si.import_path = t.path
            join folders f on f.id = si.folder_id
        )
        select e.slug as environment, t.path as secret_path from touched t join environments e on e.id = t.env_id
        where not exists (select 1 from unnest(${places.map((x) => x.environment)}::text[], ${places.map((x) => x.secretPath)}::text[]) as q(slug, path)
          where q.slug = e.slug and q.path = t.path)
        order by e.slug, t.path`;
    },

    async keysUnder(environmentId: string, path: string): Promise<{ path: string; keys: string[] }[]> {
      const rows = await sql<{ path: string; key: string }[]>`select f.path, s.key from secrets s join folders f on f.id = s.folder_id
        where f.environment_id = ${environmentId} and (${path} = '/' or f.path = ${path} or left(f.path, ${path.length + 1}) = ${path + '/'})
        order by f.path, s.key`;
      const out = new Map<string, string[]>();
      for (const r of rows) {
        const list = out.get(r.path) ?? [];
        list.push(r.key);
        out.set(r.path, list);
      }
      return [...out].map(([p, keys]) => ({ path: p, keys }));
    },
  };
}

/**
 * Deletes events older than `maxAgeSeconds` and all but the newest `maxPerProject` of each
 * project; records the highest id pruned per project. Returns how many were deleted.
 */
export async function pruneEvents(sql: Sql, opts: { maxAgeSeconds: number; maxPerProject: number }): Promise<number> {
  const rows = await sql<{ n: string }[]>`with d as (
      delete from events e using project_event_seq q
      where e.project_id = q.project_id
        and (e.created_at < now() - make_interval(secs => ${opts.maxAgeSeconds}) or e.id <= q.last_id - ${opts.maxPerProject})
      returning e.project_id, e.id
    ), m as (select project_id, max(id) as mx, count(*) as n from d group by project_id),
    u as (update project_event_seq q set pruned_id = greatest(q.pruned_id, m.mx) from m where q.project_id = m.project_id returning 1)
    select coalesce(sum(n), 0)::text as n from m`;
  return Number(rows[0]?.n ?? 0);
}
