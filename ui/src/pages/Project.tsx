// One project: header, tabs, and the Members, Audit and Settings screens
// (Secrets lives in Secrets.tsx).
import { createEffect, createMemo, createResource, createSignal, For, Match, on, Show, Switch, type JSX, type Resource } from 'solid-js';
import { api, confirmationFlags, errorText, listIdentities, listPeople, personName, ROLES, type AuditLog, type ProjectRole, type AuditVerify, type FullWalk, type IdentityMembership, type Project, type UserMembership } from '../api';
import { Badge, Button, Confirm, ConfirmDelete, createAction, Empty, ErrorText, Field, formatDate, Icon, Link, Loaded, PageHead, Pager, submitWith, Table, TextField, useId, valueOf } from '../components';
import { lastSecretsSearch, navigate } from '../router';
import { user } from '../session';
import { RolesScreen } from './Roles';
import { SecretsScreen } from './Secrets';
import { WebhooksScreen } from './Webhooks';

const TABS = [
  { id: 'secrets', label: 'Secrets', icon: 'key' },
  { id: 'members', label: 'Members', icon: 'users' },
  { id: 'roles', label: 'Roles', icon: 'shield' },
  { id: 'webhooks', label: 'Webhooks', icon: 'upload' },
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
      <Loaded of={project}>
        {(p) => (
          <>
            <nav class="crumbs" aria-label="Breadcrumb">
              <Link href="/projects">Projects</Link>
              <span aria-hidden="true">/</span>
              <span aria-current="page">{p().name}</span>
            </nav>
            <PageHead title={p().name}>
              <p class="muted-text">
                Slug <span class="mono">{p().slug}</span>
              </p>
            </PageHead>
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
              <Match when={props.tab === 'roles'}>
                <RolesScreen project={p()} />
              </Match>
              <Match when={props.tab === 'webhooks'}>
                <WebhooksScreen project={p()} />
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
      </Loaded>
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
  // Built-in roles, then the project's custom roles by slug.
  const [customRoles] = createResource(
    () => props.project.id,
    (id) => api<{ roles: ProjectRole[] }>('GET', `/api/v1/projects/${id}/roles`).then((r) => r.roles),
  );
  const roleChoices = () => [...ROLES, ...(valueOf(customRoles) ?? []).map((r) => r.slug)];
  // Only the superadmin may list identities and people; a project admin types an id.
  const [allIdentities] = createResource(() => (user()?.superAdmin ? true : undefined), listIdentities);
  const [allPeople] = createResource(() => (user()?.superAdmin ? true : undefined), listPeople);
  const [kind, setKind] = createSignal<'identity' | 'user'>('identity');
  /** What the select offers for the chosen kind: not yet a member (and not the administrator, who needs no membership). */
  const candidates = createMemo((): { id: string; label: string }[] => {
    if (kind() === 'identity') {
      const taken = new Set((valueOf(identities) ?? []).map((m) => m.identityId));
      return (valueOf(allIdentities) ?? [])
        .filter((i) => !taken.has(i.id))
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((i) => ({ id: i.id, label: i.name }));
    }
    const taken = new Set((valueOf(users) ?? []).map((m) => m.userId));
    return (valueOf(allPeople) ?? [])
      .filter((p) => !p.superAdmin && !taken.has(p.id))
      .sort((a, b) => personName(a).localeCompare(personName(b)))
      .map((p) => ({ id: p.id, label: personName(p) === p.email ? p.email : `${personName(p)} (${p.email})` }));
  });
  /** The instance's administrator: reaches every project whatever its membership says, so it is not offered for change or removal. */
  const isSuperAdmin = (id: string) => (id === user()?.id && !!user()?.superAdmin) || (valueOf(allPeople) ?? []).some((p) => p.id === id && p.superAdmin);
  /** The superadmin picks from a list; anyone else types an id. */
  const picks = () => !!user()?.superAdmin;
  const listError = () => {
    const r = kind() === 'identity' ? allIdentities : allPeople;
    return r.error ? errorText(r.error) : undefined;
  };

  const [memberId, setMemberId] = createSignal('');
  const [role, setRole] = createSignal('member');
  const adding = createAction();
  const [removing, setRemoving] = createSignal<{ kind: 'identity' | 'user'; id: string; name: string }>();
  const ids = { kind: useId('kind'), member: useId('member'), role: useId('role') };
  const path = (k: 'identity' | 'user', id: string) => `${base()}/${k === 'identity' ? 'identities' : 'users'}/${encodeURIComponent(id)}`;
  const refetchKind = (k: 'identity' | 'user') => (k === 'identity' ? refetchIdentities() : refetchUsers());

  createEffect(
    on(candidates, (c) => {
      if (picks() && !c.some((i) => i.id === memberId())) setMemberId(c[0]?.id ?? '');
    }),
  );

  /** The members of one kind, in a panel of their own. */
  const membersPanel = <M,>(k: 'identity' | 'user', title: string, of: Resource<M[]>, empty: JSX.Element, row: (m: M) => MemberRow) => (
    <div class="panel">
      <h2>{title}</h2>
      <Loaded of={of} empty={empty}>
        {(list) => (
          <MemberTable
            rows={list().map(row)}
            path={(id) => path(k, id)}
            roles={roleChoices()}
            projectName={props.project.name}
            onChanged={() => void refetchKind(k)}
            onRemove={(r) => setRemoving({ kind: k, id: r.id, name: r.name })}
          />
        )}
      </Loaded>
    </div>
  );

  const add = async () => {
    const id = memberId().trim();
    if (!id) {
      throw new Error(picks() ? (kind() === 'identity' ? 'Choose an identity to add' : 'Choose a person to add') : kind() === 'identity' ? 'Enter the identity’s id' : 'Enter the user’s id');
    }
    await api('POST', path(kind(), id), { body: { role: role() } });
    await refetchKind(kind());
    if (!picks()) setMemberId('');
  };

  return (
    <div class="stack-lg">
      <div class="panel">
        <h2>Add a member</h2>
        <form class="inline-form" onSubmit={submitWith(adding, add)} aria-label="Add a member">
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
          <Show when={picks()} fallback={<TextField label={kind() === 'identity' ? 'Identity id' : 'User id'} class="mono" value={memberId()} onValue={setMemberId} autocomplete="off" />}>
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
              <For each={roleChoices()}>{(r) => <option value={r}>{r}</option>}</For>
            </select>
          </Field>
          <Button type="submit" variant="primary" busy={adding.busy()}>
            Add member
          </Button>
        </form>
        <ErrorText message={adding.error() ?? listError()} />
        <Show when={picks() && kind() === 'user' && valueOf(allPeople) && candidates().length === 0}>
          <p class="muted-text small">
            Everyone already has a role here. Add people in <Link href="/people">People</Link>.
          </p>
        </Show>
      </div>

      {membersPanel('identity', 'Machine identities', identities, <Empty title="No machine identity has access">Add one above.</Empty>, (m) => ({
        id: m.identityId,
        name: m.identity.name,
        detail: m.identity.authMethods.join(', ') || 'no auth method',
        role: m.role,
      }))}

      {membersPanel('user', 'Users', users, <Empty title="No user memberships">The administrator can reach every project without one.</Empty>, (m) => ({
        id: m.userId,
        name: personName(m.user),
        detail: m.user.email,
        role: m.role,
        superAdmin: isSuperAdmin(m.userId),
      }))}

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
          await api('DELETE', path(r.kind, r.id), { body: {} });
          await refetchKind(r.kind);
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
  /** The instance's administrator: shown, never changed or removed here. */
  superAdmin?: boolean;
}

/**
 * Members of one kind, each with a role select and Remove. Choosing a role only marks the
 * row changed: nothing is sent until Save, and Save asks first, naming who goes from which
 * role to which (a keyboard user moving through the list must not change anyone's access).
 */
function MemberTable(props: { rows: MemberRow[]; roles: string[]; projectName: string; path: (id: string) => string; onChanged: () => void; onRemove: (r: MemberRow) => void }) {
  const [pending, setPending] = createSignal<Record<string, string>>({});
  const [confirming, setConfirming] = createSignal<{ row: MemberRow; role: string }>();
  const chosen = (r: MemberRow) => pending()[r.id] ?? r.role;
  const forget = (id: string) =>
    setPending((p) => Object.fromEntries(Object.entries(p).filter(([k]) => k !== id)));
  return (
    <>
      <Table columns={['Name', 'Role']} actions each={props.rows}>
        {(r) => (
          <tr>
            <td>
              <div class="cell-title">{r.name}</div>
              <div class="muted-text small">{r.detail}</div>
            </td>
            <td>
              <Show when={!r.superAdmin} fallback={<Badge tone="accent">administrator: every project</Badge>}>
              <div class="role-cell">
                <select
                  aria-label={`Role of ${r.name}`}
                  value={chosen(r)}
                  onChange={(e) => {
                    const v = e.currentTarget.value;
                    if (v === r.role) forget(r.id);
                    else setPending((p) => ({ ...p, [r.id]: v }));
                  }}
                >
                  <For each={props.roles.includes(r.role) ? props.roles : [...props.roles, r.role]}>{(role) => <option value={role}>{role}</option>}</For>
                </select>
                <Show when={chosen(r) !== r.role}>
                  <Button size="sm" variant="primary" aria-label={`Save role of ${r.name}`} onClick={() => setConfirming({ row: r, role: chosen(r) })}>
                    Save
                  </Button>
                  <Button size="sm" variant="ghost" aria-label={`Undo role change of ${r.name}`} onClick={() => forget(r.id)}>
                    Undo
                  </Button>
                </Show>
              </div>
              <Show when={chosen(r) !== r.role}>
                <p class="muted-text small" role="status">
                  Not saved: {r.role} → {chosen(r)}
                </p>
              </Show>
              </Show>
            </td>
            <td class="col-actions">
              <Show when={!r.superAdmin}>
                <Button size="sm" variant="ghost" aria-label={`Remove ${r.name}`} onClick={() => props.onRemove(r)}>
                  <Icon name="trash" /> Remove
                </Button>
              </Show>
            </td>
          </tr>
        )}
      </Table>
      <Confirm
        open={confirming() !== undefined}
        title="Change role"
        variant={confirming()?.role === 'no-access' ? 'danger' : 'primary'}
        message={
          <p>
            <strong>{confirming()?.row.name}</strong> goes from <strong>{confirming()?.row.role}</strong> to <strong>{confirming()?.role}</strong> in <strong>{props.projectName}</strong>, at once
            {confirming()?.role === 'no-access' ? ': they will read and change nothing there.' : '.'}
          </p>
        }
        confirmLabel={`Change to ${confirming()?.role ?? ''}`}
        onClose={() => setConfirming(undefined)}
        onConfirm={async () => {
          const c = confirming()!;
          await api('PATCH', props.path(c.row.id), { body: { role: c.role } });
          forget(c.row.id);
          props.onChanged();
        }}
      />
    </>
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

/** The server's stored full check of the whole chain (it runs in the background: a visit never starts one). */
function fullWalkText(f: FullWalk): string {
  const ago = (seconds: number) => (seconds < 90 ? 'just now' : seconds < 5400 ? `${Math.round(seconds / 60)} min ago` : `${Math.round(seconds / 3600)} h ago`);
  const running = f.running ? ` · full check running (${f.running.entries} of ${f.running.of})` : '';
  if (!f.last) return `Full check: not yet${running}`;
  const verdict = f.last.ok ? 'ok' : `broken at entry ${f.last.brokenAt ?? 'head'}`;
  return `Full check ${ago(f.last.ageSeconds)}: ${verdict}, ${f.last.read} entries read${running}`;
}

function AuditScreen(props: { project: Project }) {
  const [environment, setEnvironment] = createSignal('');
  const [secretPath, setSecretPath] = createSignal('');
  const [eventType, setEventType] = createSignal('');
  const [actor, setActor] = createSignal('');
  const [page, setPage] = createSignal(0);
  const ids = { env: useId('aenv'), path: useId('apath'), event: useId('aevent'), actor: useId('aactor') };

  const [actors] = createResource(() => (user()?.superAdmin ? true : undefined), listIdentities);
  const [people] = createResource(
    () => (user()?.superAdmin ? true : undefined),
    () => listPeople().then((all) => all.filter((p) => p.id !== user()?.id)),
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
                  {(verify()!.ageSeconds ?? 0) > 60 ? ` · checked ${Math.round(verify()!.ageSeconds! / 60)} min ago` : ''}
                </Badge>
              </Match>
              <Match when={verify()?.ok === null}>
                <Badge>
                  Checking the chain: {verify()!.entries} of {(verify() as { of: number }).of} entries so far (continues at the next visit)
                </Badge>
              </Match>
              <Match when={verify()?.ok === false}>
                <Badge tone="bad">
                  <Icon name="alert" />{' '}
                  {(verify() as { reason?: string }).reason === 'trail-missing'
                    ? 'Chain broken: the trail before it was deleted (the instance held data when the chain began)'
                    : (verify() as { reason?: string }).reason === 'legacy-unrecorded'
                      ? 'Chain broken: entries rewritten as written before the chain was keyed, which this instance never recorded'
                      : (verify() as { reason?: string }).reason === 'full-walk-record-invalid'
                        ? 'Chain not trusted: the stored result of the last full check was edited'
                      : (verify() as { brokenAt: number | null }).brokenAt === null
                      ? 'Chain broken at its head: newest entries removed or the anchor edited'
                      : `Chain broken at entry ${(verify() as { brokenAt: number }).brokenAt}`}
                </Badge>
              </Match>
            </Switch>
            <Show when={verify()?.fullWalk}>{(full) => <span class="muted-text">{fullWalkText(full())}</span>}</Show>
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
              <For each={valueOf(people) ?? []}>{(p) => <option value={`user:${p.id}`}>{p.email}</option>}</For>
              <For each={valueOf(actors) ?? []}>{(i) => <option value={`identity:${i.id}`}>{i.name} (identity)</option>}</For>
            </select>
          </Field>
          <Field label="Event" for={ids.event}>
            <select id={ids.event} value={eventType()} onChange={(e) => reset(setEventType)(e.currentTarget.value)}>
              <option value="">All events</option>
              <For each={EVENT_TYPES}>{(t) => <option value={t}>{t}</option>}</For>
            </select>
          </Field>
        </form>
        <Loaded of={logs}>
          {(list) => (
            <>
              <Show when={list().length > 0} fallback={<Empty title="No entries">Nothing matches these filters.</Empty>}>
                <Table class="audit-table" label="Audit entries, newest first" columns={['When', 'Event', 'Actor', 'Where']} each={list().slice(0, AUDIT_PAGE)}>
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
                </Table>
              </Show>
              <Pager page={page()} pageSize={AUDIT_PAGE} hasMore={list().length > AUDIT_PAGE} onPage={setPage} label="Audit pages" />
            </>
          )}
        </Loaded>
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
  const [saved, setSaved] = createSignal(false);
  const saving = createAction();
  const [deleting, setDeleting] = createSignal(false);

  const save = async () => {
    setSaved(false);
    const r = await api<{ project: Project }>('PATCH', `/api/v1/projects/${props.project.id}`, { body: { name: name(), slug: slug() } });
    props.onSaved(r.project);
    setSaved(true);
  };

  const [envName, setEnvName] = createSignal('');
  /** Follows the name until the user types one. */
  const [envSlug, setEnvSlug] = createSignal<string>();
  const addingEnv = createAction();
  const [removingEnv, setRemovingEnv] = createSignal<{ id: string; name: string }>();
  const effectiveEnvSlug = () => envSlug() ?? envName().toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  const addEnv = async () => {
    await api('POST', `/api/v1/projects/${props.project.id}/environments`, { body: { name: envName(), slug: effectiveEnvSlug() } });
    setEnvName('');
    setEnvSlug(undefined);
    props.onEnvironmentsChanged();
  };

  return (
    <div class="stack-lg">
      <div class="panel">
        <h2>General</h2>
        <form class="stack narrow" onSubmit={submitWith(saving, save)} aria-label="General settings">
          <TextField label="Project name" required value={name()} onValue={setName} />
          <TextField label="Slug" hint="Machines that read by slug must be updated when it changes." class="mono" required value={slug()} onValue={setSlug} />
          <ErrorText message={saving.error()} />
          <div class="actions-left">
            <Button type="submit" variant="primary" busy={saving.busy()}>
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
        <Table columns={['Name', 'Slug']} actions each={[...props.project.environments].sort((a, b) => a.position - b.position)}>
          {(env) => (
            <tr>
              <td>{env.name}</td>
              <td class="mono">{env.slug}</td>
              <td class="col-actions">
                <Button size="sm" variant="ghost" aria-label={`Delete environment ${env.name}`} onClick={() => setRemovingEnv({ id: env.id, name: env.name })}>
                  <Icon name="trash" /> Delete
                </Button>
              </td>
            </tr>
          )}
        </Table>
        <form class="inline-form" onSubmit={submitWith(addingEnv, addEnv)} aria-label="Add an environment">
          <TextField label="New environment name" required value={envName()} onValue={setEnvName} />
          <TextField label="Slug" class="mono" required value={effectiveEnvSlug()} onValue={setEnvSlug} />
          <Button type="submit" busy={addingEnv.busy()}>
            <Icon name="plus" /> Add environment
          </Button>
        </form>
        <ErrorText message={addingEnv.error()} />
      </div>

      <div class="panel danger-zone">
        <h2>Delete project</h2>
        <p class="muted-text">Deletes the project, its environments, folders, secrets and memberships. Machines reading it get 404 at once.</p>
        <Button variant="danger" onClick={() => setDeleting(true)}>
          <Icon name="trash" /> Delete project…
        </Button>
      </div>

      <ConfirmDelete
        what="project"
        open={deleting()}
        message={
          <p>
            This permanently deletes <strong>{props.project.name}</strong> and every secret in it. It cannot be undone.
          </p>
        }
        typeToConfirm={props.project.slug}
        onClose={() => setDeleting(false)}
        onConfirm={async (level) => {
          await api('DELETE', `/api/v1/projects/${props.project.id}`, { query: confirmationFlags(level), body: {} });
          navigate('/projects');
        }}
      />
      <ConfirmDelete
        what="environment"
        open={removingEnv() !== undefined}
        message={
          <p>
            Delete the environment <strong>{removingEnv()?.name}</strong>?
          </p>
        }
        onClose={() => setRemovingEnv(undefined)}
        onConfirm={async (level) => {
          await api('DELETE', `/api/v1/projects/${props.project.id}/environments/${removingEnv()!.id}`, { query: confirmationFlags(level), body: {} });
          props.onEnvironmentsChanged();
        }}
      />
    </div>
  );
}
