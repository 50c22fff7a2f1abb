// A small History-API router: the current location as a signal, navigate(), <Link>.
import { createSignal } from 'solid-js';

const [location, setLocation] = createSignal({ path: window.location.pathname, search: window.location.search });

window.addEventListener('popstate', () => setLocation({ path: window.location.pathname, search: window.location.search }));

export { location };

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  const url = new URL(to, window.location.origin);
  if (url.pathname === window.location.pathname && url.search === window.location.search) return;
  if (opts.replace) window.history.replaceState(null, '', url.pathname + url.search);
  else window.history.pushState(null, '', url.pathname + url.search);
  setLocation({ path: url.pathname, search: url.search });
  window.scrollTo(0, 0);
}

export function queryParam(name: string): string | null {
  return new URLSearchParams(location().search).get(name);
}

/** Matches `/projects/:id/secrets` style patterns; returns params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/').filter(Boolean);
  const s = path.split('/').filter(Boolean);
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    const seg = p[i]!;
    if (seg.startsWith(':')) params[seg.slice(1)] = decodeURIComponent(s[i]!);
    else if (seg !== s[i]) return null;
  }
  return params;
}

/** Same-page navigation for a click on an <a href> that stays in the app. */
export function linkClick(e: MouseEvent): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.currentTarget as HTMLAnchorElement;
  if (a.target || a.hasAttribute('download') || a.origin !== window.location.origin) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}

/** Where the Secrets tab of each project was last (env and path), so the tab returns there. */
const [secretsPlaces, setSecretsPlaces] = createSignal<Record<string, string>>({});
export function lastSecretsSearch(projectId: string): string {
  return secretsPlaces()[projectId] ?? '';
}
export function rememberSecretsSearch(projectId: string, search: string): void {
  if (secretsPlaces()[projectId] !== search) setSecretsPlaces((p) => ({ ...p, [projectId]: search }));
}
