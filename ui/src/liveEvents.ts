// The project's change events (POST /api/v1/events/subscribe/project-events, the stream the
// Kubernetes operator's instantUpdates reads) for screens that update by themselves when
// someone else changes what they show. Reconnects after a drop with Last-Event-ID (the
// server replays what was missed, or says `resync`), with a growing pause; stops for good
// on 401/403/404 (the caller may not read the project's events: the screen keeps working
// as before, by its own reloads).
import { openEventStream } from './api';

export interface ChangeEvent {
  /** secret:create|update|delete|import-mutation, or `resync` when the missed events are gone. */
  type: string;
  /** Where it happened (empty for `resync`). */
  places: { environment: string; secretPath: string }[];
}

const EVENTS = ['secret:create', 'secret:update', 'secret:delete', 'secret:import-mutation'];

/** Parses one SSE block into its id, event and data lines. */
function parseBlock(block: string): { id?: string; event?: string; data?: string } {
  const out: { id?: string; event?: string; data?: string } = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const at = line.indexOf(':');
    const field = at < 0 ? line : line.slice(0, at);
    const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
    if (field === 'id') out.id = value;
    else if (field === 'event') out.event = value;
    else if (field === 'data') out.data = out.data === undefined ? value : `${out.data}\n${value}`;
  }
  return out;
}

function placesOf(data: string | undefined): ChangeEvent['places'] {
  try {
    const payload = (JSON.parse(data ?? '') as { data?: { payload?: unknown } }).data?.payload;
    if (!Array.isArray(payload)) return [];
    return payload
      .filter((p): p is { environment: string; secretPath: string } => typeof p?.environment === 'string' && typeof p?.secretPath === 'string')
      .map((p) => ({ environment: p.environment, secretPath: p.secretPath }));
  } catch {
    return [];
  }
}

/** Watches `projectId` until the returned function is called. */
export function watchProject(projectId: string, onEvent: (e: ChangeEvent) => void): () => void {
  const abort = new AbortController();
  let lastEventId: string | undefined;
  let pause = 1000;

  const run = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      let res: Response;
      try {
        res = await openEventStream('/api/v1/events/subscribe/project-events', { projectId, register: EVENTS.map((event) => ({ event })) }, { lastEventId, signal: abort.signal });
      } catch {
        if (abort.signal.aborted) return;
        await wait(pause);
        pause = Math.min(pause * 2, 30_000);
        continue;
      }
      if ([401, 403, 404, 422].includes(res.status)) return;
      if (res.status !== 200 || !res.body) {
        await res.body?.cancel().catch(() => undefined);
        await wait(pause);
        pause = Math.min(pause * 2, 30_000);
        continue;
      }
      pause = 1000;
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n?/g, '\n');
          let at: number;
          while ((at = buf.indexOf('\n\n')) >= 0) {
            const f = parseBlock(buf.slice(0, at));
            buf = buf.slice(at + 2);
            if (f.id !== undefined) lastEventId = f.id;
            if (f.event === 'error') return; // the server ended our right to this stream
            if (f.event === 'resync') onEvent({ type: 'resync', places: [] });
            else if (f.event && EVENTS.includes(f.event)) onEvent({ type: f.event, places: placesOf(f.data) });
          }
        }
      } catch {
        // dropped: reconnect below with Last-Event-ID
      }
      if (abort.signal.aborted) return;
      await wait(pause);
    }
  };

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      abort.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });

  void run();
  return () => abort.abort();
}
