// One project: header, tabs, and the Members, Audit and Settings screens
// (Secrets lives in Secrets.tsx).
import { createEffect, createMemo, createResource, createSignal, For, Match, on, Show, Switch } from 'solid-js';
import { api, confirmationFlags, errorText, nextConfirmation, personName, ROLES, type AuditLog, type Confirmation, type AuditVerify, type Identity, type IdentityMembership, type Person, type Project, type UserMembership } from '../api';
import { ASK_AGAIN, Badge, Button, Confirm, DELETE_LABEL, Empty, ErrorText, Field, formatDate, Icon, Link, Loading, Pager, useId } from '../components';
import { lastSecretsSearch, navigate } from '../router';
import { user } from '../session';
import { SecretsScreen } from './Secrets';

const TABS = [
  { id: 'secrets', label: 'Secrets', icon: 'key' },
  { id: 'members', label: 'Members', icon: 'users' },
  { id: 'audit', label: 'Audit', icon: 'list' },
  { id: 'settings', label: 'Settings', icon: 'settings' },
] as const;

export function ProjectPage(props: { projectId: string; tab: string }) {
  const [project, { mutate, refetch }] = createResource(
    () => props.projectId,
    (id) => api<{ project: Project }>('GET', `/api/v1/projects/${encodeURIComponent(id)}`).then((r) => r.project),
  );
  return (
    <section class="page">
      <Show when={project()} fallback={project.error ? <ErrorText message={errorText(project.error)} /> : <Loading />}>
        {(p) => (
          <>
            <nav class="crumbs" aria-label="Breadcrumb">
              <Link href="/projects">Projects</Link>
              <span aria-hidden="true">/</span>
              <span aria-current="page">{p().name}</span>
            </nav>
            <div class="page-head">
              <div>
                <h1>{p().name}</h1>
                <p class="muted-text">
                  Slug <span class="mono">{p().slug}</span>
                </p>
              </div>
            </div>
            <nav class="tabs" aria-label="Project sections">
              <For each={TABS}>
                {(t) => (
                  <Link href={`/projects/${p().id}/${t.id}${t.id === 'secrets' ? lastSecretsSearch(p().id) : ''}`} class="tab" aria-current={props.tab === t.id ? 'page' : undefined}>
                    <Icon name={t.icon} /> {t.label}
                  </Link>
                )}
              </For>
            </nav>
            <Switch fallback={<p>Unknown section.</p>}>
              <Match when={props.tab === 'secrets'}>
                <SecretsScreen project={p()} onProjectChanged={() => void refetch()} />
              </Match>
              <Match when={props.tab === 'members'}>
                <MembersScreen project={p()} />
              </Match>
              <Match when={props.tab === 'audit'}>
                <AuditScreen project={p()} />
              </Match>
              <Match when={props.tab === 'settings'}>
                <SettingsScreen project={p()} onSaved={(np) => mutate(np)} onEnvironmentsChanged={() => void refetch()} />
              </Match>
            </Switch>
          </>
        )}
      </Show>
    </section>
  );
}

// ---- Members -------------------------------------------------------------------------------

function MembersScreen(props: { project: Project }) {
  const base = () => `/api/v1/projects/${props.project.id}/memberships`;
  const [identities, { refetch: refetchIdentities }] = createResource(
    () => props.project.id,
    () => api<{ identityMemberships: IdentityMembership[] }>('GET', `${base()}/identities`).then((r) => r.identityMemberships),
  );
  const [users, { refetch: refetchUsers }] = createResource(
    () => props.project.id,
    () => api<{ memberships: UserMembership[] }>('GET', `${base()}/users`).then((r) => r.memberships),
  );
  const [allIdentities] = createResource(
    () => (user()?.superAdmin ? true : undefined),
    () => api<{ identities: { identity: Identity }[] }>('GET', '/api/v1/identities').then((r) => r.identities.map((x) => x.identity)),
  );
  // Only the superadmin may list people (GET /api/v1/users); a project admin types an id.
  const [allPeople] = createResource(
    () => (user()?.superAdmin ? true : undefined),
    () => api<{ users: Person[] }>('GET', '/api/v1/users').then((r) => r.users),
  );
  const [kind, setKind] = createSignal<'identity' | 'user'>('identity');
  /** What the select offers for the chosen kind: not yet a member (and not the administrator, who needs no membership). */
  const candidates = createMemo((): { id: string; label: string }[] => {
    if (kind() === 'identity') {
      const taken = new Set((identities() ?? []).map((m) => m.identityId));
      return (allIdentities() ?? [])
        .filter((i) => !taken.has(i.id))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((i) => ({ id: i.id, label: i.name }));
    }
    const taken = new Set((users() ?? []).map((m) => m.userId));
    return (allPeople() ?? [])
      .filter((p) => !p.superAdmin && !taken.has(p.id))
      .sort((a, b) => personName(a).localeCompare(personName(b)))
      .map((p) => ({ id: p.id, label: personName(p) === p.email ? p.email : `${personName(p)} (${p.email})` }));
  });
  /** The superadmin picks from a list; anyone else types an id. */
  const picks = () => !!user()?.superAdmin;
  const listError = () => {
    const r = kind() === 'identity' ? allIdentities : allPeople;
    return r.error ? errorText(r.error) : undefined;
  };

  const [memberId, setMemberId] = createSignal('');
  const [role, setRole] = createSignal('member');
  const [addError, setAddError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const [removing, setRemoving] = createSignal<{ kind: 'identity' | 'user'; id: string; name: string }>();
  const ids = { kind: useId('kind'), member: useId('member'), role: useId('role') };

  createEffect(
    on(candidates, (c) => {
      if (picks() && !c.some((i) => i.id === memberId())) setMemberId(c[0]?.id ?? '');
    }),
  );

  const add = async (e: Event) => {
    e.preventDefault();
    setAddError(undefined);
    const id = memberId().trim();
    if (!id) {
      setAddError(picks() ? (kind() === 'identity' ? 'Choose an identity to add' : 'Choose a person to add') : kind() === 'identity' ? 'Enter the identity’s id' : 'Enter the user’s id');
      return;
    }
    setBusy(true);
    try {
      await api('POST', `${base()}/${kind() === 'identity' ? 'identities' : 'users'}/${encodeURIComponent(id)}`, { body: { role: role() } });
      if (kind() === 'identity') await refetchIdentities();
      else await refetchUsers();
      if (!picks()) setMemberId('');
    } catch (err) {
      setAddError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="stack-lg">
      <div class="panel">
        <h2>Add a member</h2>
        <form class="inline-form" onSubmit={add} aria-label="Add a member">
          <Field label="Kind" for={ids.kind}>
            <select
              id={ids.kind}
              value={kind()}
              onChange={(e) => {
                setKind(e.currentTarget.value as 'identity' | 'user');
                setMemberId(picks() ? (candidates()[0]?.id ?? '') : '');
              }}
            >
              <option value="identity">Machine identity</option>
              <option value="user">User</option>
            </select>
          </Field>
          <Show
            when={picks()}
            fallback={
              <Field label={kind() === 'identity' ? 'Identity id' : 'User id'} for={ids.member}>
                <input id={ids.member} class="mono" value={memberId()} onInput={(e) => setMemberId(e.currentTarget.value)} autocomplete="off" />
              </Field>
            }
          >
            <Field label={kind() === 'identity' ? 'Identity' : 'Person'} for={ids.member}>
              <select id={ids.member} value={memberId()} onChange={(e) => setMemberId(e.currentTarget.value)} disabled={candidates().length === 0}>
                <Show when={candidates().length === 0}>
                  <option value="">{kind() === 'identity' ? 'No identity left to add' : 'No person left to add'}</option>
                </Show>
                <For each={candidates()}>{(c) => <option value={c.id}>{c.label}</option>}</For>
              </select>
            </Field>
          </Show>
          <Field label="Role" for={ids.role}>
            <select id={ids.role} value={role()} onChange={(e) => setRole(e.currentTarget.value)}>
              <For each={ROLES}>{(r) => <option value={r}>{r}</option>}</For>
            </select>
          </Field>
          <Button type="submit" variant="primary" busy={busy()}>
            Add member
          </Button>
        </form>
        <ErrorText message={addError() ?? listError()} />
        <Show when={picks() && kind() === 'user' && allPeople() && candidates().length === 0}>
          <p class="muted-text small">
            Everyone already has a role here. Add people in <Link href="/people">People</Link>.
          </p>
        </Show>
      </div>

      <div class="panel">
        <h2>Machine identities</h2>
        <Show when={!identities.loading || identities()} fallback={<Loading />}>
          <ErrorText message={identities.error ? errorText(identities.error) : undefined} />
          <Show when={(identities() ?? []).length > 0} fallback={<Empty title="No machine identity has access">Add one above.</Empty>}>
            <MemberTable
              rows={(identities() ?? []).map((m) => ({ id: m.identityId, name: m.identity.name, detail: m.identity.authMethods.join(', ') || 'no auth method', role: m.role }))}
              kind="identity"
              base={base()}
              onChanged={() => void refetchIdentities()}
              onRemove={(r) => setRemoving({ kind: 'identity', id: r.id, name: r.name })}
            />
          </Show>
        </Show>
      </div>

      <div class="panel">
        <h2>Users</h2>
        <Show when={!users.loading || users()} fallback={<Loading />}>
          <ErrorText message={users.error ? errorText(users.error) : undefined} />
          <Show when={(users() ?? []).length > 0} fallback={<Empty title="No user memberships">The administrator can reach every project without one.</Empty>}>
            <MemberTable
              rows={(users() ?? []).map((m) => ({ id: m.userId, name: `${m.user.firstName} ${m.user.lastName}`.trim() || m.user.email, detail: m.user.email, role: m.role }))}
              kind="user"
              base={base()}
              onChanged={() => void refetchUsers()}
              onRemove={(r) => setRemoving({ kind: 'user', id: r.id, name: r.name })}
            />
          </Show>
        </Show>
      </div>

      <Confirm
        open={removing() !== undefined}
        title="Remove member"
        message={
          <>
            <strong>{removing()?.name}</strong> will lose access to <strong>{props.project.name}</strong> at once.
          </>
        }
        confirmLabel="Remove member"
        onClose={() => setRemoving(undefined)}
        onConfirm={async () => {
          const r = removing()!;
          await api('DELETE', `${base()}/${r.kind === 'identity' ? 'identities' : 'users'}/${encodeURIComponent(r.id)}`, { body: {} });
          if (r.kind === 'identity') await refetchIdentities();
          else await refetchUsers();
        }}
      />
    </div>
  );
}

interface MemberRow {
  id: string;
  name: string;
  detail: string;
  role: string;
}

function MemberTable(props: { rows: MemberRow[]; kind: 'identity' | 'user'; base: string; onChanged: () => void; onRemove: (r: MemberRow) => void }) {
  const [errors, setErrors] = createSignal<Record<string, string>>({});
  const change = async (r: MemberRow, role: string) => {
    setErrors((e) => ({ ...e, [r.id]: '' }));
    try {
      await api('PATCH', `${props.base}/${props.kind === 'identity' ? 'identities' : 'users'}/${encodeURIComponent(r.id)}`, { body: { role } });
      props.onChanged();
    } catch (err) {
      setErrors((e) => ({ ...e, [r.id]: errorText(err) }));
    }
  };
  return (
    <table class="table">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Role</th>
          <th scope="col" class="col-actions">
            <span class="sr-only">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        <For each={props.rows}>
          {(r) => (
            <tr>
              <td>
                <div class="cell-title">{r.name}</div>
                <div class="muted-text small">{r.detail}</div>
              </td>
              <td>
                <select aria-label={`Role of ${r.name}`} value={r.role} onChange={(e) => void change(r, e.currentTarget.value)}>
                  <For each={ROLES}>{(role) => <option value={role}>{role}</option>}</For>
                </select>
                <ErrorText message={errors()[r.id] || undefined} />
              </td>
              <td class="col-actions">
                <Button size="sm" variant="ghost" aria-label={`Remove ${r.name}`} onClick={() => props.onRemove(r)}>
                  <Icon name="trash" /> Remove
                </Button>
              </td>
            </tr>
          )}
        </For>
      </tbody>
    </table>
  );
}

// ---- Audit ---------------------------------------------------------------------------------

const EVENT_TYPES = [
  'create-secret',
  'update-secret',
  'delete-secret',
  'restore-secret-version',
  'export-secrets',
  'create-folder',
  'delete-folder',
  'create-environment',
  'update-environment',
  'delete-environment',
  'create-project',
  'update-project',
  'add-identity-to-project',
  'update-identity-project-membership',
  'remove-identity-from-project',
  'add-workspace-member',
  'update-user-workspace-role',
  'remove-workspace-member',
  'login-identity-universal-auth',
  'login-user',
];
const AUDIT_PAGE = 25;

function AuditScreen(props: { project: Project }) {
  const [environment, setEnvironment] = createSignal('');
  const [secretPath, setSecretPath] = createSignal('');
  const [eventType, setEventType] = createSignal('');
  const [actor, setActor] = createSignal('');
  const [page, setPage] = createSignal(0);
  const ids = { env: useId('aenv'), path: useId('apath'), event: useId('aevent'), actor: useId('aactor') };

  const [actors] = createResource(
    () => (user()?.superAdmin ? true : undefined),
    () => api<{ identities: { identity: Identity }[] }>('GET', '/api/v1/identities').then((r) => r.identities.map((x) => x.identity)),
  );
  const [people] = createResource(
    () => (user()?.superAdmin ? true : undefined),
    () => api<{ users: Person[] }>('GET', '/api/v1/users').then((r) => r.users.filter((p) => p.id !== user()?.id)),
  );
  const query = () => {
    const a = actor();
    const [actorType, actorId] = a === 'platform' ? ['platform', undefined] : a ? a.split(':') : [undefined, undefined];
    return {
      projectId: props.project.id,
      environment: environment() || undefined,
      secretPath: secretPath().trim() || undefined,
      eventType: eventType() || undefined,
      actorType,
      actor: actorId,
      offset: page() * AUDIT_PAGE,
      limit: AUDIT_PAGE + 1,
    };
  };
  const [logs] = createResource(query, (q) => api<{ auditLogs: AuditLog[] }>('GET', '/api/v1/organization/audit-logs', { query: q }).then((r) => r.auditLogs));
  const [verify] = createResource(() => api<AuditVerify>('GET', '/api/v1/organization/audit-logs/verify'));
  const reset = <T,>(set: (v: T) => void) => (v: T) => {
    set(v);
    setPage(0);
  };

  return (
    <div class="stack-lg">
      <div class="panel">
        <div class="panel-head">
          <h2>Audit trail</h2>
          <div role="status" class="verify">
            <Switch fallback={<Badge>Checking the chain…</Badge>}>
              <Match when={verify.error}>
                <Badge tone="warn">Chain not checked: {errorText(verify.error)}</Badge>
              </Match>
              <Match when={verify()?.ok === true}>
                <Badge tone="good">
                  <Icon name="check" /> Chain verified · {verify()!.entries} entries
                </Badge>
              </Match>
              <Match when={verify()?.ok === false}>
                <Badge tone="bad">
                  <Icon name="alert" />{' '}
                  {(verify() as { brokenAt: number | null }).brokenAt === null
                    ? 'Chain broken at its head: newest entries removed or the anchor edited'
                    : `Chain broken at entry ${(verify() as { brokenAt: number }).brokenAt}`}
                </Badge>
              </Match>
            </Switch>
          </div>
        </div>
        <form class="filters" aria-label="Filter the audit trail" onSubmit={(e) => e.preventDefault()}>
          <Field label="Environment" for={ids.env}>
            <select id={ids.env} value={environment()} onChange={(e) => reset(setEnvironment)(e.currentTarget.value)}>
              <option value="">All environments</option>
              <For each={props.project.environments}>{(env) => <option value={env.slug}>{env.name}</option>}</For>
            </select>
          </Field>
          <Field label="Path" for={ids.path}>
            <input id={ids.path} class="mono" placeholder="/" value={secretPath()} onChange={(e) => reset(setSecretPath)(e.currentTarget.value)} />
          </Field>
          <Field label="Actor" for={ids.actor}>
            <select id={ids.actor} value={actor()} onChange={(e) => reset(setActor)(e.currentTarget.value)}>
              <option value="">Anyone</option>
              <option value={`user:${user()?.id ?? ''}`}>Me ({user()?.email})</option>
              <option value="platform">The service (set-up, CLI)</option>
              <For each={people() ?? []}>{(p) => <option value={`user:${p.id}`}>{p.email}</option>}</For>
              <For each={actors() ?? []}>{(i) => <option value={`identity:${i.id}`}>{i.name} (identity)</option>}</For>
            </select>
          </Field>
          <Field label="Event" for={ids.event}>
            <select id={ids.event} value={eventType()} onChange={(e) => reset(setEventType)(e.currentTarget.value)}>
              <option value="">All events</option>
              <For each={EVENT_TYPES}>{(t) => <option value={t}>{t}</option>}</For>
            </select>
          </Field>
        </form>
        <ErrorText message={logs.error ? errorText(logs.error) : undefined} />
        <Show when={logs()} fallback={<Show when={!logs.error}><Loading /></Show>}>
          <Show when={logs()!.length > 0} fallback={<Empty title="No entries">Nothing matches these filters.</Empty>}>
            <table class="table audit-table" aria-label="Audit entries, newest first">
              <thead>
                <tr>
                  <th scope="col">When</th>
                  <th scope="col">Event</th>
                  <th scope="col">Actor</th>
                  <th scope="col">Where</th>
                </tr>
              </thead>
              <tbody>
                <For each={logs()!.slice(0, AUDIT_PAGE)}>
                  {(l) => (
                    <tr>
                      <td class="nowrap">{formatDate(l.createdAt)}</td>
                      <td>
                        <Badge tone="accent">{l.event.type}</Badge>
                      </td>
                      <td>{actorLabel(l)}</td>
                      <td class="mono small">{where(l)}</td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
          </Show>
          <Pager page={page()} pageSize={AUDIT_PAGE} hasMore={(logs()?.length ?? 0) > AUDIT_PAGE} onPage={setPage} label="Audit pages" />
        </Show>
      </div>
    </div>
  );
}

function actorLabel(l: AuditLog): string {
  const m = l.actor.metadata;
  if (l.actor.type === 'user') return String(m.email ?? m.userId ?? 'user');
  if (l.actor.type === 'identity') return `${String(m.name ?? m.identityId ?? 'identity')} (identity)`;
  return 'the service';
}

function where(l: AuditLog): string {
  const m = l.event.metadata;
  const parts: string[] = [];
  if (typeof m.environment === 'string') parts.push(m.environment);
  if (typeof m.secretPath === 'string') parts.push(m.secretPath);
  let s = parts.join(' ');
  if (typeof m.secretKey === 'string') s += `${s ? ' ' : ''}${m.secretKey}`;
  if (typeof m.secretVersion === 'number') s += ` v${m.secretVersion}`;
  return s || '—';
}

// ---- Settings ------------------------------------------------------------------------------

function SettingsScreen(props: { project: Project; onSaved: (p: Project) => void; onEnvironmentsChanged: () => void }) {
  const [name, setName] = createSignal(props.project.name);
  const [slug, setSlug] = createSignal(props.project.slug);
  const [error, setError] = createSignal<string>();
  const [saved, setSaved] = createSignal(false);
  const [busy, setBusy] = createSignal(false);
  const [deleting, setDeleting] = createSignal(false);
  const [deleteLevel, setDeleteLevel] = createSignal<Confirmation>('plain');
  const ids = { name: useId('sname'), slug: useId('sslug'), envName: useId('envname'), envSlug: useId('envslug') };

  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setSaved(false);
    try {
      const r = await api<{ project: Project }>('PATCH', `/api/v1/projects/${props.project.id}`, { body: { name: name(), slug: slug() } });
      props.onSaved(r.project);
      setSaved(true);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  const [envName, setEnvName] = createSignal('');
  const [envSlug, setEnvSlug] = createSignal('');
  const [envSlugEdited, setEnvSlugEdited] = createSignal(false);
  const [envError, setEnvError] = createSignal<string>();
  const [envBusy, setEnvBusy] = createSignal(false);
  const [removingEnv, setRemovingEnv] = createSignal<{ id: string; name: string; level: Confirmation }>();
  const effectiveEnvSlug = () => (envSlugEdited() ? envSlug() : envName().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, ''));
  const addEnv = async (e: Event) => {
    e.preventDefault();
    setEnvBusy(true);
    setEnvError(undefined);
    try {
      await api('POST', `/api/v1/projects/${props.project.id}/environments`, { body: { name: envName(), slug: effectiveEnvSlug() } });
      setEnvName('');
      setEnvSlug('');
      setEnvSlugEdited(false);
      props.onEnvironmentsChanged();
    } catch (err) {
      setEnvError(errorText(err));
    } finally {
      setEnvBusy(false);
    }
  };

  return (
    <div class="stack-lg">
      <div class="panel">
        <h2>General</h2>
        <form class="stack narrow" onSubmit={save} aria-label="General settings">
          <Field label="Project name" for={ids.name}>
            <input id={ids.name} required value={name()} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label="Slug" for={ids.slug} hint="Machines that read by slug must be updated when it changes.">
            <input id={ids.slug} class="mono" required value={slug()} onInput={(e) => setSlug(e.currentTarget.value)} />
          </Field>
          <ErrorText message={error()} />
          <div class="actions-left">
            <Button type="submit" variant="primary" busy={busy()}>
              Save changes
            </Button>
            <Show when={saved()}>
              <span class="ok-text" role="status">
                <Icon name="check" /> Saved
              </span>
            </Show>
          </div>
        </form>
      </div>

      <div class="panel">
        <h2>Environments</h2>
        <table class="table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Slug</th>
              <th scope="col" class="col-actions">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            <For each={[...props.project.environments].sort((a, b) => a.position - b.position)}>
              {(env) => (
                <tr>
                  <td>{env.name}</td>
                  <td class="mono">{env.slug}</td>
                  <td class="col-actions">
                    <Button size="sm" variant="ghost" aria-label={`Delete environment ${env.name}`} onClick={() => setRemovingEnv({ id: env.id, name: env.name, level: 'plain' })}>
                      <Icon name="trash" /> Delete
                    </Button>
                  </td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
        <form class="inline-form" onSubmit={addEnv} aria-label="Add an environment">
          <Field label="New environment name" for={ids.envName}>
            <input id={ids.envName} required value={envName()} onInput={(e) => setEnvName(e.currentTarget.value)} />
          </Field>
          <Field label="Slug" for={ids.envSlug}>
            <input
              id={ids.envSlug}
              class="mono"
              required
              value={effectiveEnvSlug()}
              onInput={(e) => {
                setEnvSlugEdited(true);
                setEnvSlug(e.currentTarget.value);
              }}
            />
          </Field>
          <Button type="submit" busy={envBusy()}>
            <Icon name="plus" /> Add environment
          </Button>
        </form>
        <ErrorText message={envError()} />
      </div>

      <div class="panel danger-zone">
        <h2>Delete project</h2>
        <p class="muted-text">Deletes the project, its environments, folders, secrets and memberships. Machines reading it get 404 at once.</p>
        <Button variant="danger" onClick={() => setDeleting(true)}>
          <Icon name="trash" /> Delete project…
        </Button>
      </div>

      <Confirm
        open={deleting()}
        title="Delete project"
        message={
          <>
            <p>
              This permanently deletes <strong>{props.project.name}</strong> and every secret in it. It cannot be undone.
            </p>
          </>
        }
        typeToConfirm={props.project.slug}
        confirmLabel={DELETE_LABEL[deleteLevel()]('project')}
        onClose={() => {
          setDeleting(false);
          setDeleteLevel('plain');
        }}
        onConfirm={async () => {
          try {
            await api('DELETE', `/api/v1/projects/${props.project.id}`, { query: confirmationFlags(deleteLevel()), body: {} });
          } catch (err) {
            const next = nextConfirmation(err, deleteLevel());
            if (!next) throw err;
            setDeleteLevel(next);
            throw new Error(ASK_AGAIN[next]('project'));
          }
          navigate('/projects');
        }}
      />
      <Confirm
        open={removingEnv() !== undefined}
        title="Delete environment"
        message={
          <>
            <p>
              Delete the environment <strong>{removingEnv()?.name}</strong>?
            </p>
          </>
        }
        confirmLabel={DELETE_LABEL[removingEnv()?.level ?? 'plain']('environment')}
        onClose={() => setRemovingEnv(undefined)}
        onConfirm={async () => {
          const r = removingEnv()!;
          try {
            await api('DELETE', `/api/v1/projects/${props.project.id}/environments/${r.id}`, { query: confirmationFlags(r.level), body: {} });
          } catch (err) {
            const next = nextConfirmation(err, r.level);
            if (!next) throw err;
            setRemovingEnv({ ...r, level: next });
            throw new Error(ASK_AGAIN[next]('environment'));
          }
          props.onEnvironmentsChanged();
        }}
      />
    </div>
  );
}
