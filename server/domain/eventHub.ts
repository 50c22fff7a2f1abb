// Delivery of change events to this replica's subscribers (the SSE streams of
// /api/v1/events/subscribe/project-events), from the event table.
//
// A committed change that added events announces (the pipeline, after its commit) `projectId:lastId` on the cache bus
// (in-process on the embedded default; Redis pub/sub across replicas). The announcement
// carries no event: on hearing it, this replica reads the project's rows after the
// lowest cursor of its subscribers, in id order, and hands each subscriber the rows after
// its own cursor. So a row is delivered once per subscriber, in order, whatever number of
// announcements arrive; a replica that missed announcements (Redis cut off) catches up on
// the next one, on the bus's reset, or on the poll every `pollMs`, from the table.
// Ids are contiguous per project (the counter moves in the change's transaction), so a
// gap after a cursor means pruned events: that subscriber gets a `resync`.
import type { CacheBus } from '../../storage/cache.js';
import type { EventRow, eventsStore } from '../../storage/events.js';
import { EVENTS_TOPIC } from './events.js';
/** Rows read per query while catching up. */
const PAGE = 500;
/**
 * Sinks handed rows per turn of the event loop: a fan-out to hundreds of subscribers
 * yields between slices, so reads waiting on the loop are not held behind it.
 */
const SLICE = 32;

export interface EventSink {
  readonly projectId: string;
  /** The last id delivered (set by subscribe, moved by the hub). */
  cursor: number;
  /** Rows after the cursor, in id order. */
  deliver(rows: readonly EventRow[]): void;
  /** Events the sink should have had were pruned: it must re-read. */
  resync(): void;
}

export interface EventHubDeps {
  events: Pick<ReturnType<typeof eventsStore>, 'after' | 'cursor'>;
  bus: Pick<CacheBus, 'subscribe' | 'onReset'>;
  /** Fallback catch-up interval (ms). */
  pollMs: number;
  log?: (fields: Record<string, unknown>, msg: string) => void;
}

interface ProjectState {
  sinks: Set<EventSink>;
  reading: boolean;
  again: boolean;
}

export function eventHub(deps: EventHubDeps) {
  const { events, bus, log } = deps;
  const projects = new Map<string, ProjectState>();

  async function pump(projectId: string): Promise<void> {
    const p = projects.get(projectId);
    if (!p) return;
    if (p.reading) {
      p.again = true;
      return;
    }
    p.reading = true;
    try {
      for (;;) {
        p.again = false;
        if (p.sinks.size === 0) break;
        // The sinks of this read: one added meanwhile waits for the next (`again`).
        const batch = [...p.sinks];
        let from = Infinity;
        for (const s of batch) from = Math.min(from, s.cursor);
        const rows = await events.after(projectId, from, PAGE);
        for (let i = 0; i < batch.length; i++) {
          if (i > 0 && i % SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
          const s = batch[i]!;
          if (!p.sinks.has(s)) continue;
          const mine = rows.filter((r) => r.id > s.cursor);
          if (mine.length === 0) continue;
          if (mine[0]!.id !== s.cursor + 1) {
            s.cursor = mine[0]!.id - 1;
            s.resync();
          }
          s.cursor = mine[mine.length - 1]!.id;
          s.deliver(mine);
        }
        if (rows.length < PAGE && !p.again) break;
      }
    } catch (err) {
      // The next announcement or poll tries again; nothing is lost (the rows stay).
      log?.({ event: 'events-read', err: err instanceof Error ? err.message : String(err) }, 'events: reading the event table failed; retrying on the next poll');
    } finally {
      p.reading = false;
    }
  }

  bus.subscribe((topic, key) => {
    if (topic !== EVENTS_TOPIC) return;
    const projectId = key.slice(0, key.indexOf(':'));
    if (projects.has(projectId)) void pump(projectId);
  });
  const pumpAll = () => {
    for (const id of projects.keys()) void pump(id);
  };
  bus.onReset(pumpAll);
  const poller = setInterval(pumpAll, deps.pollMs);
  poller.unref();

  return {
    /**
     * Adds `sink`: from `lastEventId` when the caller has one (what it missed is replayed;
     * a `resync` when that is older than what is kept or unknown), else from now.
     */
    async subscribe(sink: EventSink, lastEventId?: number): Promise<() => void> {
      const c = await events.cursor(sink.projectId);
      if (lastEventId === undefined) sink.cursor = c.lastId;
      else if (lastEventId > c.lastId || lastEventId < c.prunedId) {
        sink.cursor = c.lastId;
        sink.resync();
      } else sink.cursor = lastEventId;
      let p = projects.get(sink.projectId);
      if (!p) projects.set(sink.projectId, (p = { sinks: new Set(), reading: false, again: false }));
      p.sinks.add(sink);
      void pump(sink.projectId);
      return () => {
        const q = projects.get(sink.projectId);
        if (!q) return;
        q.sinks.delete(sink);
        if (q.sinks.size === 0 && !q.reading) projects.delete(sink.projectId);
      };
    },

    /** Sinks attached on this replica. */
    get size(): number {
      let n = 0;
      for (const p of projects.values()) n += p.sinks.size;
      return n;
    },

    close(): void {
      clearInterval(poller);
      projects.clear();
    },
  };
}
export type EventHub = ReturnType<typeof eventHub>;
