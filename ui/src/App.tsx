// The shell: first-visit set-up or login until signed in, then the top bar and routes.
import { createEffect, Match, onMount, Show, Switch } from 'solid-js';
import { Button, Icon, Link, Loading } from './components';
import { location, match, navigate } from './router';
import { boot, loadSession, logout, user } from './session';
import { LoginPage, SetupPage } from './pages/Auth';
import { ProjectsPage } from './pages/Projects';
import { ProjectPage } from './pages/Project';
import { IdentitiesPage, IdentityPage } from './pages/Identities';
import { PeoplePage } from './pages/People';
import { AccountPage } from './pages/Account';

export function App() {
  onMount(() => void loadSession());

  // Keep the URL in step with the session state.
  createEffect(() => {
    const b = boot();
    const path = location().path;
    if (b.state === 'setup' && path !== '/setup') navigate('/setup', { replace: true });
    else if (b.state === 'login' && path !== '/login') navigate('/login', { replace: true });
    else if (b.state === 'in' && (path === '/login' || path === '/setup' || path === '/')) navigate('/projects', { replace: true });
  });

  createEffect(() => {
    const p = location().path;
    const title = p.startsWith('/identities') ? 'Machine identities' : p === '/people' ? 'People' : p === '/account' ? 'My account' : p.startsWith('/projects/') ? 'Project' : p === '/projects' ? 'Projects' : p === '/setup' ? 'Set up' : 'Log in';
    document.title = `${title} · Vault`;
  });

  return (
    <Switch fallback={<Loading label="Starting…" />}>
      <Match when={boot().state === 'error'}>
        <main class="auth-page">
          <div class="auth-card">
            <h1>Vault</h1>
            <p class="error" role="alert">
              {(boot() as { message: string }).message}
            </p>
            <Button onClick={() => void loadSession()}>Try again</Button>
          </div>
        </main>
      </Match>
      <Match when={boot().state === 'setup'}>
        <SetupPage />
      </Match>
      <Match when={boot().state === 'login'}>
        <LoginPage />
      </Match>
      <Match when={boot().state === 'in'}>
        <Shell />
      </Match>
    </Switch>
  );
}

function Shell() {
  const path = () => location().path;
  const section = () => (path().startsWith('/identities') ? 'identities' : path().startsWith('/people') ? 'people' : path() === '/account' ? 'account' : 'projects');
  return (
    <div class="app">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <div class="topbar-inner">
          <Link href="/projects" class="brand">
            <span class="brand-mark" aria-hidden="true">
              <Icon name="shield" />
            </span>
            Vault
          </Link>
          <nav aria-label="Main" class="mainnav">
            <Link href="/projects" aria-current={section() === 'projects' ? 'page' : undefined}>
              Projects
            </Link>
            <Show when={user()?.superAdmin}>
              <Link href="/identities" aria-current={section() === 'identities' ? 'page' : undefined}>
                Machine identities
              </Link>
              <Link href="/people" aria-current={section() === 'people' ? 'page' : undefined}>
                People
              </Link>
            </Show>
          </nav>
          <div class="topbar-user">
            <Link href="/account" class="user-link" title="My account: change password" aria-current={path() === '/account' ? 'page' : undefined}>
              <Icon name="settings" /> <span class="sr-only">My account: </span>
              <span class="user-email">{user()?.email}</span>
            </Link>
            <Button size="sm" variant="ghost" onClick={() => void logout()}>
              <Icon name="logout" /> Log out
            </Button>
          </div>
        </div>
      </header>
      <main id="main" class="content" tabindex="-1">
        <Switch fallback={<NotFound />}>
          <Match when={path() === '/projects' || path() === '/'}>
            <ProjectsPage />
          </Match>
          <Match when={match('/projects/:projectId/:tab', path()) ?? match('/projects/:projectId', path())}>
            {(params) => <ProjectPage projectId={params().projectId!} tab={params().tab ?? 'secrets'} />}
          </Match>
          <Match when={path() === '/identities'}>
            <IdentitiesPage />
          </Match>
          <Match when={path() === '/people' && user()?.superAdmin}>
            <PeoplePage />
          </Match>
          <Match when={path() === '/account'}>
            <AccountPage />
          </Match>
          <Match when={match('/identities/:identityId', path())}>{(params) => <IdentityPage identityId={params().identityId!} />}</Match>
        </Switch>
      </main>
    </div>
  );
}

function NotFound() {
  return (
    <section class="page">
      <h1>Page not found</h1>
      <p>
        <Link href="/projects">Back to projects</Link>
      </p>
    </section>
  );
}
