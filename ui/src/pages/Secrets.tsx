// Secrets of one project: environment switcher, folder navigation with breadcrumbs, the
// table (values hidden until revealed), add / edit / delete / bulk paste, history with
// restore, search by key, export.
import { batch, createEffect, createMemo, createResource, createSignal, For, on, Show } from 'solid-js';
import { api, confirmationFlags, errorText, nextConfirmation, withQuery, type Confirmation, type Folder, type Project, type Secret, type SecretVersion } from '../api';
import { ASK_AGAIN, Badge, Button, Confirm, CopyButton, DELETE_LABEL, Dialog, Empty, ErrorText, Field, formatDate, Icon, Link, Loading, Pager, SearchBox, useId } from '../components';
import { location, navigate, rememberSecretsSearch } from '../router';

const PAGE = 50;
const HISTORY_PAGE = 10;

export function normalisePath(p: string | null | undefined): string {
  const parts = (p ?? '/').split('/').filter((s) => s !== '');
  return `/${parts.join('/')}`;
}

export function parseBulk(text: string): { entries: { key: string; value: string }[]; errors: string[] } {
  const entries: { key: string; value: string }[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    let line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (line.startsWith('export ')) line = line.slice(7).trim();
    const eq = line.indexOf('=');
    if (eq <= 0) {
      errors.push(`Line ${i + 1}: expected KEY=value`);
      return;
    }
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value[value.length - 1] === value[0]) value = value.slice(1, -1);
    if (!/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(key)) {
      errors.push(`Line ${i + 1}: “${key}” is not a valid key`);
      return;
    }
    if (seen.has(key)) {
      errors.push(`Line ${i + 1}: ${key} appears twice`);
      return;
    }
    seen.add(key);
    entries.push({ key, value });
  });
  return { entries, errors };
}

export function SecretsScreen(props: { project: Project; onProjectChanged: () => void }) {
  const envs = () => [...props.project.environments].sort((a, b) => a.position - b.position);
  const params = () => new URLSearchParams(location().search);
  const env = () => {
    const want = params().get('env');
    return envs().find((e) => e.slug === want)?.slug ?? envs()[0]?.slug ?? '';
  };
  const path = () => normalisePath(params().get('path'));
  const go = (e: string, p: string) => navigate(withQuery(`/projects/${props.project.id}/secrets`, { env: e, path: p === '/' ? undefined : p }));
  const scope = () => ({ projectId: props.project.id, environment: env(), secretPath: path() });

  const [secrets, { refetch }] = createResource(
    () => (env() ? scope() : undefined),
    (q) => api<{ secrets: Secret[] }>('GET', '/api/v4/secrets', { query: { ...q, viewSecretValue: false } }).then((r) => r.secrets),
  );
  const [folders, { refetch: refetchFolders }] = createResource(
    () => (env() ? scope() : undefined),
    (q) => api<{ folders: Folder[] }>('GET', '/api/v2/folders', { query: { projectId: q.projectId, environment: q.environment, path: q.secretPath } }).then((r) => r.folders),
  );

  const [search, setSearch] = createSignal('');
  const [page, setPage] = createSignal(0);
  /** Values shown in clear, by secret id; dropped whenever the place changes. */
  const [revealed, setRevealed] = createSignal<Record<string, string>>({});
  const [rowError, setRowError] = createSignal<Record<string, string>>({});
  createEffect(() => rememberSecretsSearch(props.project.id, withQuery('', { env: env(), path: path() === '/' ? undefined : path() })));
  createEffect(
    on([env, path], () =>
      batch(() => {
        setRevealed({});
        setRowError({});
        setPage(0);
      }),
    ),
  );

  const filtered = createMemo(() => {
    const s = search().trim().toLowerCase();
    const list = [...(secrets() ?? [])].sort((a, b) => a.secretKey.localeCompare(b.secretKey));
    return s ? list.filter((x) => x.secretKey.toLowerCase().includes(s)) : list;
  });
  const visible = () => filtered().slice(page() * PAGE, page() * PAGE + PAGE);

  const fetchValue = async (s: Secret): Promise<string> => {
    const known = revealed()[s.id];
    if (known !== undefined) return known;
    const r = await api<{ secret: Secret }>('GET', `/api/v4/secrets/${encodeURIComponent(s.secretKey)}`, { query: scope() });
    return r.secret.secretValue;
  };
  const toggle = async (s: Secret) => {
    if (revealed()[s.id] !== undefined) {
      setRevealed((r) => {
        const { [s.id]: _drop, ...rest } = r;
        return rest;
      });
      return;
    }
    try {
      const v = await fetchValue(s);
      setRevealed((r) => ({ ...r, [s.id]: v }));
      setRowError((e) => ({ ...e, [s.id]: '' }));
    } catch (err) {
      setRowError((e) => ({ ...e, [s.id]: errorText(err) }));
    }
  };

  const [adding, setAdding] = createSignal(false);
  const [bulk, setBulk] = createSignal(false);
  const [editing, setEditing] = createSignal<Secret>();
  const [deleting, setDeleting] = createSignal<{ secret: Secret; level: Confirmation }>();
  const [history, setHistory] = createSignal<Secret>();
  const [newFolder, setNewFolder] = createSignal(false);
  const [deletingFolder, setDeletingFolder] = createSignal<{ folder: Folder; level: Confirmation }>();
  const refresh = () => {
    setRevealed({});
    void refetch();
  };
  const crumbs = () => {
    const parts = path().split('/').filter(Boolean);
    return parts.map((name, i) => ({ name, path: `/${parts.slice(0, i + 1).join('/')}` }));
  };
  const exportHref = (format: 'json' | 'csv') => withQuery(`/api/v1/projects/${props.project.id}/export`, { environment: env(), secretPath: path(), format });

  return (
    <div class="stack-lg">
      <div class="secrets-bar">
        <nav class="env-switch" aria-label="Environments">
          <For each={envs()}>
            {(e) => (
              <Link href={withQuery(`/projects/${props.project.id}/secrets`, { env: e.slug, path: path() === '/' ? undefined : path() })} class="env-pill" aria-current={env() === e.slug ? 'page' : undefined} title={e.name}>
                {e.slug}
              </Link>
            )}
          </For>
          <Link href={`/projects/${props.project.id}/settings`} class="env-pill env-add" title="Add an environment in Settings">
            <Icon name="plus" />
            <span class="sr-only">Add an environment</span>
          </Link>
        </nav>
        <div class="export">
          <a class="btn btn-secondary btn-sm" href={exportHref('json')} download="">
            <Icon name="download" /> Export JSON
          </a>
          <a class="btn btn-secondary btn-sm" href={exportHref('csv')} download="">
            <Icon name="download" /> Export CSV
          </a>
        </div>
      </div>

      <div class="panel">
        <div class="panel-head">
          <nav class="crumbs path-crumbs" aria-label="Folder path">
            <Show when={path() !== '/'} fallback={<span aria-current="page" class="mono">/ (root)</span>}>
              <Link href={withQuery(`/projects/${props.project.id}/secrets`, { env: env() })} class="mono">
                / (root)
              </Link>
            </Show>
            <For each={crumbs()}>
              {(c, i) => (
                <>
                  <span aria-hidden="true">/</span>
                  <Show when={i() < crumbs().length - 1} fallback={<span aria-current="page" class="mono">{c.name}</span>}>
                    <Link href={withQuery(`/projects/${props.project.id}/secrets`, { env: env(), path: c.path })} class="mono">
                      {c.name}
                    </Link>
                  </Show>
                </>
              )}
            </For>
          </nav>
          <div class="toolbar-actions">
            <Button size="sm" onClick={() => setNewFolder(true)}>
              <Icon name="folder" /> New folder
            </Button>
            <Button size="sm" onClick={() => setBulk(true)}>
              <Icon name="upload" /> Bulk paste
            </Button>
            <Button size="sm" variant="primary" onClick={() => setAdding(true)}>
              <Icon name="plus" /> Add secret
            </Button>
          </div>
        </div>

        <div class="toolbar">
          <SearchBox
            label="Search secrets by key"
            placeholder="Search by key"
            value={search()}
            onInput={(v) => {
              setSearch(v);
              setPage(0);
            }}
          />
          <span class="muted-text small" aria-live="polite">
            <Show when={(secrets()?.length ?? 0) > 0}>
              {filtered().length} of {secrets()!.length} secrets
            </Show>
          </span>
        </div>

        <ErrorText message={folders.error && !secrets.error ? errorText(folders.error) : undefined} />
        <Show when={(folders() ?? []).length > 0}>
          <ul class="folders" aria-label="Folders">
            <For each={[...(folders() ?? [])].sort((a, b) => a.name.localeCompare(b.name))}>
              {(f) => (
                <li class="folder-row">
                  <Link href={withQuery(`/projects/${props.project.id}/secrets`, { env: env(), path: normalisePath(`${path()}/${f.name}`) })} class="folder-link">
                    <Icon name="folder" /> <span class="mono">{f.name}</span>
                  </Link>
                  <button type="button" class="icon-btn" aria-label={`Delete folder ${f.name}`} title="Delete folder" onClick={() => setDeletingFolder({ folder: f, level: 'plain' })}>
                    <Icon name="trash" />
                  </button>
                </li>
              )}
            </For>
          </ul>
        </Show>

        <Show when={!secrets.loading || secrets()} fallback={<Loading />}>
          <ErrorText message={secrets.error ? errorText(secrets.error) : undefined} />
          <Show when={secrets()}>
            <Show
              when={secrets()!.length > 0}
              fallback={
                <Empty title={`No secrets in ${env()} ${path()}`}>
                  Add one, or paste several <span class="mono">KEY=value</span> lines at once.
                </Empty>
              }
            >
              <table class="table secrets-table" aria-label={`Secrets in ${env()} ${path()}`}>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Value</th>
                    <th scope="col" class="col-version">
                      Version
                    </th>
                    <th scope="col" class="col-actions">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  <For each={visible()}>
                    {(s) => {
                      const shown = () => revealed()[s.id];
                      return (
                        <tr data-key={s.secretKey}>
                          <th scope="row" class="mono key-cell">
                            {s.secretKey}
                            <Show when={s.secretComment}>
                              <div class="muted-text small comment">{s.secretComment}</div>
                            </Show>
                          </th>
                          <td class="value-cell">
                            <div class="value-line">
                              <Show when={shown() !== undefined} fallback={<span class="masked" aria-label="Hidden value">••••••••••••</span>}>
                                <code class="value" data-testid="secret-value">
                                  {shown()}
                                </code>
                              </Show>
                              <button
                                type="button"
                                class="icon-btn"
                                aria-label={`${shown() !== undefined ? 'Hide' : 'Reveal'} value of ${s.secretKey}`}
                                aria-pressed={shown() !== undefined}
                                title={shown() !== undefined ? 'Hide value' : 'Reveal value'}
                                onClick={() => void toggle(s)}
                              >
                                <Icon name={shown() !== undefined ? 'eye-off' : 'eye'} />
                              </button>
                              <CopyButton label={`Copy value of ${s.secretKey}`} text={() => fetchValue(s)} />
                            </div>
                            <ErrorText message={rowError()[s.id] || undefined} />
                          </td>
                          <td class="col-version">
                            <Badge>v{s.version}</Badge>
                          </td>
                          <td class="col-actions">
                            <div class="row-actions">
                              <button type="button" class="icon-btn" aria-label={`Edit ${s.secretKey}`} title="Edit" onClick={() => setEditing(s)}>
                                <Icon name="edit" />
                              </button>
                              <button type="button" class="icon-btn" aria-label={`History of ${s.secretKey}`} title="History" onClick={() => setHistory(s)}>
                                <Icon name="history" />
                              </button>
                              <button type="button" class="icon-btn danger" aria-label={`Delete ${s.secretKey}`} title="Delete" onClick={() => setDeleting({ secret: s, level: 'plain' })}>
                                <Icon name="trash" />
                              </button>
                            </div>
                          </td>
                        </tr>
                      );
                    }}
                  </For>
                </tbody>
              </table>
              <Show when={filtered().length === 0}>
                <p class="muted-text">No key matches “{search()}”.</p>
              </Show>
              <Pager page={page()} pageSize={PAGE} total={filtered().length} onPage={setPage} label="Secrets pages" />
            </Show>
          </Show>
        </Show>
      </div>

      <SecretDialog open={adding()} scope={scope()} onClose={() => setAdding(false)} onSaved={refresh} />
      <SecretDialog open={editing() !== undefined} scope={scope()} secret={editing()} onClose={() => setEditing(undefined)} onSaved={refresh} />
      <BulkDialog open={bulk()} scope={scope()} existing={(secrets() ?? []).map((s) => s.secretKey)} onClose={() => setBulk(false)} onSaved={refresh} />
      <HistoryDialog secret={history()} onClose={() => setHistory(undefined)} onRestored={refresh} />
      <FolderDialog
        open={newFolder()}
        scope={scope()}
        onClose={() => setNewFolder(false)}
        onSaved={(name) => {
          void refetchFolders();
          go(env(), normalisePath(`${path()}/${name}`));
        }}
      />
      <Confirm
        open={deleting() !== undefined}
        title="Delete secret"
        message={
          <>
            Delete <strong class="mono">{deleting()?.secret.secretKey}</strong> from {env()} <span class="mono">{path()}</span>? Machines reading it will no longer get it.
          </>
        }
        confirmLabel={deleting()?.level === 'overrideImmutable' ? 'Delete protected key' : 'Delete secret'}
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          const d = deleting()!;
          try {
            await api('DELETE', `/api/v4/secrets/${encodeURIComponent(d.secret.secretKey)}`, {
              body: { ...scope(), overrideImmutable: d.level === 'overrideImmutable' || undefined },
            });
          } catch (err) {
            const next = nextConfirmation(err, d.level);
            if (next !== 'overrideImmutable') throw err;
            setDeleting({ ...d, level: next });
            throw new Error(PROTECTED_KEY);
          }
          refresh();
        }}
      />
      <Confirm
        open={deletingFolder() !== undefined}
        title="Delete folder"
        message={
          <>
            <p>
              Delete the folder <strong class="mono">{deletingFolder()?.folder.name}</strong>?
            </p>
          </>
        }
        confirmLabel={DELETE_LABEL[deletingFolder()?.level ?? 'plain']('folder')}
        onClose={() => setDeletingFolder(undefined)}
        onConfirm={async () => {
          const d = deletingFolder()!;
          try {
            await api('DELETE', `/api/v2/folders/${encodeURIComponent(d.folder.id)}`, {
              body: { projectId: props.project.id, environment: env(), path: path(), ...confirmationFlags(d.level) },
            });
          } catch (err) {
            const next = nextConfirmation(err, d.level);
            if (!next) throw err;
            setDeletingFolder({ ...d, level: next });
            throw new Error(ASK_AGAIN[next]('folder'));
          }
          void refetchFolders();
        }}
      />
    </div>
  );
}

type Scope = { projectId: string; environment: string; secretPath: string };

const PROTECTED_KEY = 'This key is marked as never changing: consumers may break if it changes. Confirm again to do it anyway.';

function SecretDialog(props: { open: boolean; scope: Scope; secret?: Secret; onClose: () => void; onSaved: () => void }) {
  const [key, setKey] = createSignal('');
  const [value, setValue] = createSignal('');
  const [comment, setComment] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const [loading, setLoading] = createSignal(false);
  // Set when the API refused a change of a key marked as never changing: saving again overrides.
  const [override, setOverride] = createSignal(false);
  const ids = { key: useId('skey'), value: useId('svalue'), comment: useId('scomment') };

  createEffect(
    on(
      () => [props.open, props.secret] as const,
      async ([open, secret]) => {
        setError(undefined);
        setOverride(false);
        if (!open) return;
        setKey(secret?.secretKey ?? '');
        setComment(secret?.secretComment ?? '');
        setValue('');
        if (secret) {
          setLoading(true);
          try {
            const r = await api<{ secret: Secret }>('GET', `/api/v4/secrets/${encodeURIComponent(secret.secretKey)}`, { query: props.scope });
            setValue(r.secret.secretValue);
          } catch (err) {
            setError(errorText(err));
          } finally {
            setLoading(false);
          }
        }
      },
    ),
  );

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      if (props.secret) {
        const renamed = key().trim() !== props.secret.secretKey;
        await api('PATCH', `/api/v4/secrets/${encodeURIComponent(props.secret.secretKey)}`, {
          body: {
            ...props.scope,
            secretValue: value(),
            secretComment: comment(),
            newSecretName: renamed ? key().trim() : undefined,
            overrideImmutable: override() || undefined,
          },
        });
      } else {
        await api('POST', `/api/v4/secrets/${encodeURIComponent(key().trim())}`, { body: { ...props.scope, secretValue: value(), secretComment: comment() || undefined } });
      }
      props.onSaved();
      props.onClose();
    } catch (err) {
      if (props.secret && nextConfirmation(err, override() ? 'overrideImmutable' : 'plain') === 'overrideImmutable') {
        setOverride(true);
        setError(PROTECTED_KEY);
      } else setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={props.open} title={props.secret ? `Edit ${props.secret.secretKey}` : 'Add secret'} onClose={props.onClose}>
      <form class="stack" onSubmit={submit}>
        <p class="muted-text small">
          In <strong>{props.scope.environment}</strong> <span class="mono">{props.scope.secretPath}</span>
        </p>
        <Field label="Key" for={ids.key}>
          <input id={ids.key} class="mono" required maxlength="255" value={key()} onInput={(e) => setKey(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
        </Field>
        <Field label="Value" for={ids.value}>
          <textarea id={ids.value} class="mono" rows="4" value={value()} onInput={(e) => setValue(e.currentTarget.value)} disabled={loading()} autocomplete="off" spellcheck={false} />
        </Field>
        <Field label="Comment (optional)" for={ids.comment}>
          <input id={ids.comment} value={comment()} onInput={(e) => setComment(e.currentTarget.value)} autocomplete="off" />
        </Field>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={props.onClose}>Cancel</Button>
          <Button type="submit" variant={override() ? 'danger' : 'primary'} busy={busy()} disabled={loading()}>
            {props.secret ? (override() ? 'Save anyway' : 'Save changes') : 'Add secret'}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function BulkDialog(props: { open: boolean; scope: Scope; existing: string[]; onClose: () => void; onSaved: () => void }) {
  const [text, setText] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const id = useId('bulk');
  const parsed = createMemo(() => parseBulk(text()));
  const clashes = createMemo(() => {
    const have = new Set(props.existing);
    return parsed().entries.filter((e) => have.has(e.key)).map((e) => e.key);
  });
  const close = () => {
    setText('');
    setError(undefined);
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    if (parsed().errors.length > 0 || parsed().entries.length === 0) {
      setError(parsed().entries.length === 0 ? 'Paste at least one KEY=value line' : 'Fix the lines listed above first');
      return;
    }
    setBusy(true);
    try {
      await api('POST', '/api/v4/secrets/batch', { body: { ...props.scope, secrets: parsed().entries.map((x) => ({ secretKey: x.key, secretValue: x.value })) } });
      props.onSaved();
      close();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={props.open} title="Bulk paste" onClose={close} wide>
      <form class="stack" onSubmit={submit}>
        <Field
          label="KEY=value lines"
          for={id}
          hint={
            <>
              One secret per line into <strong>{props.scope.environment}</strong> <span class="mono">{props.scope.secretPath}</span>. Blank lines and lines starting with # are skipped; quotes around a value are removed. All are added or none.
            </>
          }
        >
          <textarea id={id} class="mono" rows="12" value={text()} onInput={(e) => setText(e.currentTarget.value)} spellcheck={false} autocomplete="off" placeholder={'DATABASE_URL=postgres://…\nAPI_KEY=…'} />
        </Field>
        <div class="bulk-summary" aria-live="polite">
          <Badge tone={parsed().entries.length ? 'accent' : 'neutral'}>{parsed().entries.length} secrets</Badge>
          <Show when={clashes().length > 0}>
            <span class="warn-text small">Already here: {clashes().join(', ')}</span>
          </Show>
        </div>
        <Show when={parsed().errors.length > 0}>
          <ul class="error-list" role="alert">
            <For each={parsed().errors.slice(0, 8)}>{(m) => <li>{m}</li>}</For>
          </ul>
        </Show>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy()}>
            Add {parsed().entries.length || ''} secrets
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function HistoryDialog(props: { secret: Secret | undefined; onClose: () => void; onRestored: () => void }) {
  const [page, setPage] = createSignal(0);
  const [shown, setShown] = createSignal<Record<number, boolean>>({});
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal<number>();
  createEffect(
    on(
      () => props.secret?.id,
      () => {
        setPage(0);
        setShown({});
        setError(undefined);
      },
    ),
  );
  const [versions] = createResource(
    () => (props.secret ? { id: props.secret.id, page: page() } : undefined),
    (q) =>
      api<{ secretVersions: SecretVersion[] }>('GET', `/api/v1/secret/${q.id}/secret-versions`, { query: { offset: q.page * HISTORY_PAGE, limit: HISTORY_PAGE + 1 } }).then(
        (r) => r.secretVersions,
      ),
  );
  const latest = () => props.secret?.version;
  const restore = async (v: SecretVersion) => {
    setBusy(v.version);
    setError(undefined);
    try {
      await api('POST', `/api/v1/secret/${props.secret!.id}/secret-versions/${v.version}/restore`, { body: {} });
      props.onRestored();
      props.onClose();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <Dialog open={props.secret !== undefined} title={`History of ${props.secret?.secretKey ?? ''}`} onClose={props.onClose} wide>
      <ErrorText message={error() ?? (versions.error ? errorText(versions.error) : undefined)} />
      <Show when={versions()} fallback={<Show when={!versions.error}><Loading /></Show>}>
        <table class="table">
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Value</th>
              <th scope="col">When</th>
              <th scope="col" class="col-actions">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            <For each={versions()!.slice(0, HISTORY_PAGE)}>
              {(v) => (
                <tr>
                  <td>
                    <Badge tone={v.version === latest() ? 'good' : 'neutral'}>v{v.version}</Badge>
                    <Show when={v.secretKey !== props.secret?.secretKey}>
                      <div class="muted-text small mono">{v.secretKey}</div>
                    </Show>
                  </td>
                  <td>
                    <div class="value-line">
                      <Show when={shown()[v.version]} fallback={<span class="masked" aria-label="Hidden value">••••••••</span>}>
                        <code class="value">{v.secretValue}</code>
                      </Show>
                      <button
                        type="button"
                        class="icon-btn"
                        aria-pressed={!!shown()[v.version]}
                        aria-label={`${shown()[v.version] ? 'Hide' : 'Reveal'} value of version ${v.version}`}
                        onClick={() => setShown((s) => ({ ...s, [v.version]: !s[v.version] }))}
                      >
                        <Icon name={shown()[v.version] ? 'eye-off' : 'eye'} />
                      </button>
                    </div>
                  </td>
                  <td class="nowrap small">{formatDate(v.createdAt)}</td>
                  <td class="col-actions">
                    <Show when={v.version !== latest()} fallback={<span class="muted-text small">current</span>}>
                      <Button size="sm" busy={busy() === v.version} aria-label={`Restore version ${v.version}`} onClick={() => void restore(v)}>
                        <Icon name="history" /> Restore
                      </Button>
                    </Show>
                  </td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
        <Pager page={page()} pageSize={HISTORY_PAGE} hasMore={(versions()?.length ?? 0) > HISTORY_PAGE} onPage={setPage} label="History pages" />
        <p class="muted-text small">Restoring makes the chosen version's value the newest version; history is kept.</p>
      </Show>
    </Dialog>
  );
}

function FolderDialog(props: { open: boolean; scope: Scope; onClose: () => void; onSaved: (name: string) => void }) {
  const [name, setName] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const id = useId('fname');
  const close = () => {
    setName('');
    setError(undefined);
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', '/api/v2/folders', { body: { projectId: props.scope.projectId, environment: props.scope.environment, path: props.scope.secretPath, name: name().trim() } });
      const n = name().trim();
      close();
      props.onSaved(n);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={props.open} title="New folder" onClose={close}>
      <form class="stack" onSubmit={submit}>
        <Field label="Folder name" for={id} hint={<>Created in {props.scope.environment} <span class="mono">{props.scope.secretPath}</span>.</>}>
          <input id={id} class="mono" required maxlength="64" value={name()} onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" />
        </Field>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy()}>
            Create folder
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
