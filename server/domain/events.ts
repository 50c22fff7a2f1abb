// Change events derived from the audit entries a change writes (every secret write, restore,
// import change and move already writes one entry per secret it touches, never a value):
// the pipeline turns them into event rows in the same transaction (storage/events.ts), and
// tells the subscribers of every replica once the change has committed (server/events/hub.ts).
//
//   create-secret                      → secret:create   (a batch: one event, every key)
//   update-secret, restore-secret-version → secret:update (a rename names the old and new key)
//   delete-secret (cascades included)  → secret:delete
//   create/update/delete-secret-import → secret:import-mutation (the importing folder)
//   update-folder (rename)             → secret:delete at the old paths, secret:create at the new
//   update-environment (slug)          → the same, from the old slug to the new
// and a secret create/update/delete also gives secret:import-mutation at every folder that
// imports the changed one (directly or through other imports): their answers with imports
// change too, and their subscribers (the operator watching prod / that imports /shared) must
// hear it.
// Everything else (protect-secret, tags, roles, a re-key, logins) changes no answer a
// subscriber reads the events for: no event. A change that changes nothing writes no entry.
import type { AuditEvent } from '../../storage/audit.js';
import type { EventDraft, EventType } from '../../storage/events.js';
import type { TxStores } from '../../storage/index.js';

type Entry = Omit<AuditEvent, 'ip'>;

const SECRET_EVENTS: Record<string, EventType> = {
  'create-secret': 'secret:create',
  'update-secret': 'secret:update',
  'restore-secret-version': 'secret:update',
  'delete-secret': 'secret:delete',
};
const IMPORT_EVENTS = new Set(['create-secret-import', 'update-secret-import', 'delete-secret-import']);

/** Whether `entry` may give events (checked as entries are appended: cheap, no query). */
export function mayGiveEvents(entry: Entry): boolean {
  if (!entry.projectId) return false;
  // A deleted project takes its events with it.
  if (entry.metadata?.cascade === 'delete-project') return false;
  if (entry.eventType in SECRET_EVENTS || IMPORT_EVENTS.has(entry.eventType)) return true;
  if (entry.eventType === 'update-folder') return true;
  return entry.eventType === 'update-environment' && typeof entry.metadata?.oldSlug === 'string';
}

/** Adds `d` to `out`, merged into the last draft when it has the same type, environment and path. */
function push(out: EventDraft[], d: EventDraft): void {
  const last = out[out.length - 1];
  if (last && last.type === d.type && last.environment === d.environment && last.secretPath === d.secretPath && d.type !== 'secret:import-mutation') {
    for (const k of d.secretKeys) if (!last.secretKeys.includes(k)) last.secretKeys.push(k);
    return;
  }
  out.push({ ...d, secretKeys: [...d.secretKeys] });
}

/** The moves of every secret under a moved folder or a re-slugged environment. */
async function moved(s: Pick<TxStores, 'events'>, environmentId: string, under: string, from: { env: string; path: (p: string) => string }, to: string, out: EventDraft[]) {
  for (const f of await s.events.keysUnder(environmentId, under)) {
    push(out, { type: 'secret:delete', environment: from.env, secretPath: from.path(f.path), secretKeys: f.keys });
    push(out, { type: 'secret:create', environment: to, secretPath: f.path, secretKeys: f.keys });
  }
}

/** A change's event drafts per project, in entry order, from its audit entries (run inside its transaction, after its writes). */
export async function eventDrafts(s: Pick<TxStores, 'events' | 'projects'>, entries: readonly Entry[]): Promise<Map<string, { actor: Pick<Entry, 'actorType' | 'actorId'>; drafts: EventDraft[] }>> {
  const byProject = new Map<string, { actor: Pick<Entry, 'actorType' | 'actorId'>; drafts: EventDraft[] }>();
  for (const e of entries) {
    if (!mayGiveEvents(e)) continue;
    const projectId = e.projectId!;
    let p = byProject.get(projectId);
    if (!p) byProject.set(projectId, (p = { actor: { actorType: e.actorType, actorId: e.actorId }, drafts: [] }));
    const env = e.environment ?? '';
    const path = e.secretPath ?? '/';
    const type = SECRET_EVENTS[e.eventType];
    if (type && e.secretKey) {
      const renamedFrom = e.metadata?.renamedFrom;
      push(p.drafts, { type, environment: env, secretPath: path, secretKeys: typeof renamedFrom === 'string' ? [renamedFrom, e.secretKey] : [e.secretKey] });
    } else if (IMPORT_EVENTS.has(e.eventType)) {
      push(p.drafts, { type: 'secret:import-mutation', environment: env, secretPath: path, secretKeys: [] });
    } else if (e.eventType === 'update-folder') {
      const oldPath = String(e.metadata?.oldPath ?? '');
      const newPath = String(e.metadata?.newPath ?? '');
      const project = await s.projects.byId(projectId);
      const environment = project?.environments.find((x) => x.slug === env);
      if (!environment || !oldPath || !newPath) continue;
      await moved(s, environment.id, newPath, { env, path: (q) => oldPath + q.slice(newPath.length) }, env, p.drafts);
    } else if (e.eventType === 'update-environment') {
      const environmentId = String(e.metadata?.environmentId ?? '');
      if (!environmentId) continue;
      await moved(s, environmentId, '/', { env: String(e.metadata!.oldSlug), path: (q) => q }, env, p.drafts);
    }
  }
  for (const [id, p] of byProject) {
    if (p.drafts.length === 0) {
      byProject.delete(id);
      continue;
    }
    const changed = p.drafts.filter((d) => d.type !== 'secret:import-mutation' && d.secretKeys.length > 0);
    const places = [...new Map(changed.map((d) => [`${d.environment}\u0000${d.secretPath}`, { environment: d.environment, secretPath: d.secretPath }])).values()];
    for (const imp of await s.events.importersOf(id, places)) {
      if (!p.drafts.some((d) => d.type === 'secret:import-mutation' && d.environment === imp.environment && d.secretPath === imp.secretPath)) {
        p.drafts.push({ type: 'secret:import-mutation', environment: imp.environment, secretPath: imp.secretPath, secretKeys: [] });
      }
    }
  }
  return byProject;
}

/** The bus topic of event announcements (key: `${projectId}:${lastId}`; server/domain/eventHub.ts listens). */
export const EVENTS_TOPIC = 'project-events';

/** What a committed change tells the subscribers: each project it added events to, and its last id. */
export type EventNotice = { projectId: string; lastId: number };

/** Writes the change's events in its transaction; returns the notices to send once it has committed. */
export async function writeEvents(s: Pick<TxStores, 'events' | 'projects'>, entries: readonly Entry[]): Promise<EventNotice[]> {
  if (!entries.some(mayGiveEvents)) return [];
  const notices: EventNotice[] = [];
  // In project id order: two changes touching the same projects lock their counters in one order.
  const drafts = [...(await eventDrafts(s, entries))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [projectId, p] of drafts) notices.push({ projectId, lastId: await s.events.append(projectId, p.actor, p.drafts) });
  return notices;
}
