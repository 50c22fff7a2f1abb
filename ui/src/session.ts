// Who is logged in. The session cookie is HttpOnly; the page keeps only the user and the
// CSRF token (fetched again from /api/v1/users/me after a reload).
import { createSignal } from 'solid-js';
import { api, setCsrfToken, setUnauthorizedHandler, type User } from './api';
import { navigate } from './router';

export type Boot = { state: 'loading' } | { state: 'setup'; setupCodeRequired: boolean } | { state: 'login' } | { state: 'in'; user: User } | { state: 'error'; message: string };

const [boot, setBoot] = createSignal<Boot>({ state: 'loading' });
export { boot };

export function user(): User | undefined {
  const b = boot();
  return b.state === 'in' ? b.user : undefined;
}

export async function loadSession(): Promise<void> {
  try {
    const me = await api<{ user: User; csrfToken?: string }>('GET', '/api/v1/users/me', { quiet401: true });
    setCsrfToken(me.csrfToken);
    setBoot({ state: 'in', user: me.user });
    return;
  } catch (err) {
    if (!(err instanceof Error) || (err as { status?: number }).status !== 401) {
      // fall through to the set-up check: it says whether the service answers at all
    }
  }
  try {
    const cfg = await api<{ config: { initialized: boolean; setupCodeRequired?: boolean } }>('GET', '/api/v1/admin/config');
    setBoot(cfg.config.initialized ? { state: 'login' } : { state: 'setup', setupCodeRequired: cfg.config.setupCodeRequired === true });
  } catch (err) {
    setBoot({ state: 'error', message: err instanceof Error ? err.message : 'The service did not answer' });
  }
}

export function signedIn(u: User, csrfToken: string): void {
  setCsrfToken(csrfToken);
  setBoot({ state: 'in', user: u });
}

export async function logout(): Promise<void> {
  try {
    await api('POST', '/api/v1/auth/logout', { body: {} });
  } catch {
    // the cookie is cleared either way once the session is gone server-side
  }
  setCsrfToken(undefined);
  setBoot({ state: 'login' });
  navigate('/login', { replace: true });
}

setUnauthorizedHandler(() => {
  setCsrfToken(undefined);
  setBoot({ state: 'login' });
});
