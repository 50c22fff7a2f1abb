// Secrets of one project: environment switcher, folder navigation with breadcrumbs, the
// table (values hidden until revealed), add / edit / delete / bulk paste, history with
// restore, search by key, export.
import { batch, createEffect, createResource, createSignal, For, on, onCleanup, onMount, Show, untrack, type JSX, type Resource } from 'solid-js';
import { api, confirmationFlags, errorText, readSecret, withQuery, type Confirmation, type Folder, type ImportedFolder, type Project, type Secret, type SecretImport, type SecretVersion, type Tag } from '../api';
import { Badge, Button, Confirm, ConfirmDelete, CopyButton, createAction, submitWith, createConfirmation, createListView, Dialog, DialogForm, Empty, ErrorText, Field, formatDate, Icon, IconButton, Link, ListTable, Loaded, Pager, SearchBox, Table, TextField, useDialog, useId, valueOf } from '../components';
import { watchProject } from '../liveEvents';
import { location, navigate, rememberSecretsSearch } from '../router';
import { BulkImport } from './BulkImport';
import { plural } from '../plural';

const PAGE = 50;
const HISTORY_PAGE = 10;

export function normalisePath(p: string | null | undefined): string {
  const parts = (p ?? '/').split('/').filter((s) => s !== '');
  return `/${parts.join('/')}`;
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

  /** The tag the list is filtered by (the API's tagSlugs), or '' for none. */
  const [tagFilter, setTagFilter] = createSignal('');
  const [managingTags, setManagingTags] = createSignal(false);
  const [projectTags, { refetch: refetchTags }] = createResource(
    () => props.project.id,
    (id) => api<{ tags: Tag[] }>('GET', `/api/v1/projects/${id}/tags`).then((r) => r.tags),
  );
  const [secrets, { refetch }] = createResource(
    () => (env() ? { ...scope(), tag: tagFilter() } : undefined),
    ({ tag, ...q }) => api<{ secrets: Secret[] }>('GET', '/api/v4/secrets', { query: { ...q, viewSecretValue: false, tagSlugs: tag || undefined } }).then((r) => r.secrets),
  );
  // The rows on screen are kept while the next place loads: the table names the place they
  // came from, not the one being loaded (a table labelled "/" never shows /apps' rows).
  const [listedPlace, setListedPlace] = createSignal('');
  createEffect(() => {
    if (secrets.state === 'ready') setListedPlace(untrack(() => `${env()} ${path()}`));
  });
  const [folders, { refetch: refetchFolders }] = createResource(
    () => (env() ? scope() : undefined),
    (q) => api<{ folders: Folder[] }>('GET', '/api/v2/folders', { query: { projectId: q.projectId, environment: q.environment, path: q.secretPath } }).then((r) => r.folders),
  );

  // The folder's imports (ids and order) and what each answers (keys only: values stay hidden).
  const [imports, { refetch: refetchImports }] = createResource(
    () => (env() ? scope() : undefined),
    async (q) => {
      const [defined, read] = await Promise.all([
        api<{ secretImports: SecretImport[] }>('GET', '/api/v1/secret-imports', { query: { projectId: q.projectId, environment: q.environment, path: q.secretPath } }),
        api<{ imports: ImportedFolder[] }>('GET', '/api/v4/secrets', { query: { ...q, include_imports: true, viewSecretValue: false } }),
      ]);
      return defined.secretImports.map((i) => ({
        ...i,
        keys: read.imports.find((r) => r.environment === i.importEnv.slug && r.secretPath === i.importPath)?.secrets.map((x) => x.secretKey),
      }));
    },
  );
  // Another person's change to this folder, or to a folder it imports, reloads what is shown.
  const [liveNote, setLiveNote] = createSignal('');
  createEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const due = { secrets: false, imports: false };
    const stop = watchProject(props.project.id, (e) => {
      const here = e.type === 'resync' || e.places.some((p) => p.environment === env() && p.secretPath === path());
      const imported = e.type === 'resync' || e.places.some((p) => valueOf(imports)?.some((i) => i.importEnv.slug === p.environment && i.importPath === p.secretPath));
      if (here) due.secrets = true;
      if (imported || (here && e.type === 'secret:import-mutation')) due.imports = true;
      if (!due.secrets && !due.imports) return;
      clearTimeout(timer);
      // A burst of changes (a batch, an import) reloads once.
      timer = setTimeout(() => {
        if (due.secrets) void refetch();
        if (due.imports) void refetchImports();
        due.secrets = due.imports = false;
        setLiveNote(`List updated with a change at ${new Date().toLocaleTimeString()}`);
      }, 250);
    });
    onCleanup(() => {
      clearTimeout(timer);
      stop();
    });
  });
  const [addingImport, setAddingImport] = createSignal(false);
  const [removingImport, setRemovingImport] = createSignal<SecretImport>();

  const list = createListView({
    items: () => valueOf(secrets),
    pageSize: PAGE,
    order: (a, b) => a.secretKey.localeCompare(b.secretKey),
    matches: (x, q) => x.secretKey.toLowerCase().includes(q),
  });
  /** Values shown in clear, by secret id; dropped whenever the place changes. */
  const [revealed, setRevealed] = createSignal<Record<string, string>>({});
  const [rowError, setRowError] = createSignal<Record<string, string>>({});
  createEffect(() => rememberSecretsSearch(props.project.id, withQuery('', { env: env(), path: path() === '/' ? undefined : path() })));
  createEffect(
    on([env, path], () =>
      batch(() => {
        setRevealed({});
        setRowError({});
        list.setPage(0);
      }),
    ),
  );

  const fetchValue = async (s: Secret): Promise<string> => {
    const known = revealed()[s.id];
    if (known !== undefined) return known;
    return (await readSecret(scope(), s.secretKey)).secretValue;
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
  const [deleting, setDeleting] = createSignal<Secret>();
  const [history, setHistory] = createSignal<Secret>();
  const [newFolder, setNewFolder] = createSignal(false);
  const [deletingFolder, setDeletingFolder] = createSignal<Folder>();
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
            <Button size="sm" onClick={() => setAddingImport(true)}>
              <Icon name="download" /> Import folder
            </Button>
            <Button size="sm" onClick={() => setManagingTags(true)}>
              <Icon name="list" /> Tags
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
          <SearchBox label="Search secrets by key" placeholder="Search by key" value={list.query()} onInput={list.setQuery} />
          <Show when={(valueOf(projectTags) ?? []).length > 0}>
            <select class="tag-filter" aria-label="Filter by tag" value={tagFilter()} onChange={(e) => setTagFilter(e.currentTarget.value)}>
              <option value="">All tags</option>
              <For each={valueOf(projectTags)}>{(t) => <option value={t.slug}>{t.slug}</option>}</For>
            </select>
          </Show>
          <span class="muted-text small" aria-live="polite">
            <Show when={(valueOf(secrets)?.length ?? 0) > 0}>
              {countText(list.filtered().length, valueOf(secrets)!.length)}
            </Show>
          </span>
          <span class="sr-only" role="status" data-testid="live-note">
            {liveNote()}
          </span>
        </div>

        <BesideSecrets of={folders} secrets={secrets}>
          {(rows) => (
            <ul class="folders" aria-label="Folders">
              <For each={[...rows()].sort((a, b) => a.name.localeCompare(b.name))}>
                {(f) => (
                  <li class="folder-row">
                    <Link href={withQuery(`/projects/${props.project.id}/secrets`, { env: env(), path: normalisePath(`${path()}/${f.name}`) })} class="folder-link">
                      <Icon name="folder" /> <span class="mono">{f.name}</span>
                    </Link>
                    <IconButton icon="trash" label={`Delete folder ${f.name}`} title="Delete folder" onClick={() => setDeletingFolder(f)} />
                  </li>
                )}
              </For>
            </ul>
          )}
        </BesideSecrets>

        <BesideSecrets of={imports} secrets={secrets}>
          {(rows) => (
            <section class="imports" aria-label="Imports">
              <h2 class="small muted-text">Imported, in order (a key of this folder wins; among imports, the last one holding a key)</h2>
              <ul class="folders">
                <For each={rows()}>
                  {(i) => (
                    <li class="folder-row" data-import={`${i.importEnv.slug}:${i.importPath}`}>
                      <span>
                        <Badge>{i.position}</Badge> <strong>{i.importEnv.slug}</strong> <span class="mono">{i.importPath}</span>{' '}
                        <span class="muted-text small">
                          {i.keys === undefined ? 'not readable or missing' : i.keys.length === 0 ? 'no secrets' : `${i.keys.length} secret${i.keys.length === 1 ? '' : 's'}: `}
                          <span class="mono">{(i.keys ?? []).slice(0, 12).join(', ')}{(i.keys?.length ?? 0) > 12 ? ', …' : ''}</span>
                        </span>
                      </span>
                      <IconButton icon="trash" label={`Remove import ${i.importEnv.slug} ${i.importPath}`} title="Remove import" onClick={() => setRemovingImport(i)} />
                    </li>
                  )}
                </For>
              </ul>
            </section>
          )}
        </BesideSecrets>

        <Loaded
          of={secrets}
          empty={
            <Empty title={`No secrets in ${env()} ${path()}`}>
              Add one, or paste several <span class="mono">KEY=value</span> lines at once.
            </Empty>
          }
        >
          {() => (
            <>
              <ListTable
                list={list}
                class="secrets-table"
                label={`Secrets in ${listedPlace()}`}
                columns={['Key', 'Value', { label: 'Version', class: 'col-version' }]}
                actions
                pager="Secrets pages"
                noun="key"
              >
                {(s) => {
                  const shown = () => revealed()[s.id];
                  return (
                    <tr data-key={s.secretKey}>
                      <th scope="row" class="mono key-cell">
                        {s.secretKey}
                        <Show when={s.tags.length > 0}>
                          <span class="tag-chips">
                            <For each={s.tags}>
                              {(tag) => (
                                <span class="tag-chip" data-tag={tag.slug} title={tag.color ? `Tag ${tag.slug} (${tag.color})` : `Tag ${tag.slug}`}>
                                  {tag.slug}
                                </span>
                              )}
                            </For>
                          </span>
                        </Show>
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
                          <IconButton
                            icon={shown() !== undefined ? 'eye-off' : 'eye'}
                            label={`${shown() !== undefined ? 'Hide' : 'Reveal'} value of ${s.secretKey}`}
                            pressed={shown() !== undefined}
                            title={shown() !== undefined ? 'Hide value' : 'Reveal value'}
                            onClick={() => void toggle(s)}
                          />
                          <CopyButton label={`Copy value of ${s.secretKey}`} text={() => fetchValue(s)} />
                        </div>
                        <ErrorText message={rowError()[s.id] || undefined} />
                      </td>
                      <td class="col-version">
                        <Badge>v{s.version}</Badge>
                      </td>
                      <td class="col-actions">
                        <div class="row-actions">
                          <IconButton icon="edit" label={`Edit ${s.secretKey}`} title="Edit" onClick={() => setEditing(s)} />
                          <IconButton icon="history" label={`History of ${s.secretKey}`} title="History" onClick={() => setHistory(s)} />
                          <IconButton icon="trash" label={`Delete ${s.secretKey}`} title="Delete" danger onClick={() => setDeleting(s)} />
                        </div>
                      </td>
                    </tr>
                  );
                }}
              </ListTable>
            </>
          )}
        </Loaded>
      </div>

      <Dialog open={adding()} title="Add secret" onClose={() => setAdding(false)}>
        <SecretForm scope={scope()} tags={valueOf(projectTags) ?? []} onSaved={refresh} />
      </Dialog>
      <Dialog open={editing() !== undefined} title={`Edit ${editing()?.secretKey ?? ''}`} onClose={() => setEditing(undefined)}>
        <SecretForm scope={scope()} tags={valueOf(projectTags) ?? []} secret={editing()} onSaved={refresh} />
      </Dialog>
      <Dialog open={bulk()} title="Bulk paste" onClose={() => setBulk(false)} wide>
        <BulkImport scope={scope()} existing={(valueOf(secrets) ?? []).map((s) => s.secretKey)} onSaved={refresh} />
      </Dialog>
      <Dialog open={history() !== undefined} title={`History of ${history()?.secretKey ?? ''}`} onClose={() => setHistory(undefined)} wide>
        <History secret={history()!} onRestored={refresh} />
      </Dialog>
      <Dialog open={newFolder()} title="New folder" onClose={() => setNewFolder(false)}>
        <FolderForm
          scope={scope()}
          onSaved={(name) => {
            void refetchFolders();
            go(env(), normalisePath(`${path()}/${name}`));
          }}
        />
      </Dialog>
      <Dialog open={managingTags()} title="Tags" onClose={() => setManagingTags(false)}>
        <TagsForm
          projectId={props.project.id}
          tags={valueOf(projectTags) ?? []}
          onChanged={() => {
            void refetchTags();
            refresh();
          }}
        />
      </Dialog>
      <Dialog open={addingImport()} title="Import folder" onClose={() => setAddingImport(false)}>
        <ImportForm scope={scope()} environments={envs().map((e) => e.slug)} onSaved={() => void refetchImports()} />
      </Dialog>
      <Confirm
        open={removingImport() !== undefined}
        title="Remove import"
        message={
          <>
            Stop importing <strong>{removingImport()?.importEnv.slug}</strong> <span class="mono">{removingImport()?.importPath}</span> into {env()} <span class="mono">{path()}</span>? Its secrets stay where they are.
          </>
        }
        confirmLabel="Remove import"
        onClose={() => setRemovingImport(undefined)}
        onConfirm={async () => {
          await api('DELETE', `/api/v1/secret-imports/${encodeURIComponent(removingImport()!.id)}`, { body: { projectId: props.project.id, environment: env(), path: path() } });
          void refetchImports();
        }}
      />
      <Confirm
        open={deleting() !== undefined}
        title="Delete secret"
        message={
          <>
            Delete <strong class="mono">{deleting()?.secretKey}</strong> from {env()} <span class="mono">{path()}</span>? Machines reading it will no longer get it.
          </>
        }
        confirmLabel={(level) => (level === 'overrideImmutable' ? 'Delete protected key' : 'Delete secret')}
        askAgain={(next) => (next === 'overrideImmutable' ? PROTECTED_KEY : undefined)}
        onClose={() => setDeleting(undefined)}
        onConfirm={async (level) => {
          await api('DELETE', `/api/v4/secrets/${encodeURIComponent(deleting()!.secretKey)}`, {
            body: { ...scope(), overrideImmutable: level === 'overrideImmutable' || undefined },
          });
          refresh();
        }}
      />
      <ConfirmDelete
        what="folder"
        open={deletingFolder() !== undefined}
        message={
          <p>
            Delete the folder <strong class="mono">{deletingFolder()?.name}</strong>?
          </p>
        }
        onClose={() => setDeletingFolder(undefined)}
        onConfirm={async (level) => {
          await api('DELETE', `/api/v2/folders/${encodeURIComponent(deletingFolder()!.id)}`, {
            body: { projectId: props.project.id, environment: env(), path: path(), ...confirmationFlags(level) },
          });
          void refetchFolders();
        }}
      />
    </div>
  );
}

type Scope = { projectId: string; environment: string; secretPath: string };

/**
 * What a folder holds besides its secrets (sub-folders, imports): the list's own error
 * (unless the secrets' error already says it), then the list once it has rows.
 */
function BesideSecrets<T>(props: { of: Resource<T[]>; secrets: Resource<unknown>; children: (rows: () => T[]) => JSX.Element }) {
  const rows = () => valueOf(props.of) ?? [];
  return (
    <>
      <ErrorText message={props.of.error && !props.secrets.error ? errorText(props.of.error) : undefined} />
      <Show when={rows().length > 0}>{(_shown) => props.children(rows)}</Show>
    </>
  );
}

const PROTECTED_KEY = 'This key is marked as never changing: consumers may break if it changes. Confirm again to do it anyway.';

/** Adds a secret, or edits one (its value is fetched when the form opens). */
function SecretForm(props: { scope: Scope; tags: Tag[]; secret?: Secret; onSaved: () => void }) {
  const dialog = useDialog();
  const [key, setKey] = createSignal(props.secret?.secretKey ?? '');
  const [value, setValue] = createSignal('');
  const [comment, setComment] = createSignal(props.secret?.secretComment ?? '');
  const [tagIds, setTagIds] = createSignal<string[]>(props.secret?.tags.map((x) => x.id) ?? []);
  const [loading, setLoading] = createSignal(false);
  const action = createAction();
  // A change of a key marked as never changing is refused until it is saved again, with the override.
  const confirmation = createConfirmation((next) => (props.secret && next === 'overrideImmutable' ? PROTECTED_KEY : undefined));
  const override = () => confirmation.level() === 'overrideImmutable';
  const valueId = useId('svalue');

  onMount(async () => {
    const secret = props.secret;
    if (!secret) return;
    setLoading(true);
    try {
      setValue((await readSecret(props.scope, secret.secretKey)).secretValue);
    } catch (err) {
      action.setError(errorText(err));
    } finally {
      setLoading(false);
    }
  });

  const send = async (level: Confirmation) => {
    if (props.secret) {
      const renamed = key().trim() !== props.secret.secretKey;
      await api('PATCH', `/api/v4/secrets/${encodeURIComponent(props.secret.secretKey)}`, {
        body: {
          ...props.scope,
          secretValue: value(),
          secretComment: comment(),
          newSecretName: renamed ? key().trim() : undefined,
          tagIds: tagIds(),
          overrideImmutable: level === 'overrideImmutable' || undefined,
        },
      });
    } else {
      await api('POST', `/api/v4/secrets/${encodeURIComponent(key().trim())}`, { body: { ...props.scope, secretValue: value(), secretComment: comment() || undefined, tagIds: tagIds() } });
    }
  };

  return (
    <DialogForm
      action={action}
      onSubmit={async () => {
        await confirmation.attempt(send);
        props.onSaved();
        dialog.close();
      }}
      submitLabel={props.secret ? (override() ? 'Save anyway' : 'Save changes') : 'Add secret'}
      submitVariant={override() ? 'danger' : 'primary'}
      submitDisabled={loading()}
    >
      <p class="muted-text small">
        In <strong>{props.scope.environment}</strong> <span class="mono">{props.scope.secretPath}</span>
      </p>
      <TextField label="Key" class="mono" required maxlength="255" value={key()} onValue={setKey} autocomplete="off" spellcheck={false} />
      <Field label="Value" for={valueId}>
        <textarea id={valueId} class="mono" rows="4" value={value()} onInput={(e) => setValue(e.currentTarget.value)} disabled={loading()} autocomplete="off" spellcheck={false} />
      </Field>
      <TextField label="Comment (optional)" value={comment()} onValue={setComment} autocomplete="off" />
      <Show when={props.tags.length > 0}>
        <fieldset class="tag-choices">
          <legend>Tags</legend>
          <For each={props.tags}>
            {(tag) => (
              <label class="tag-choice">
                <input
                  type="checkbox"
                  checked={tagIds().includes(tag.id)}
                  onChange={(e) => setTagIds((ids) => (e.currentTarget.checked ? [...ids, tag.id] : ids.filter((i) => i !== tag.id)))}
                />{' '}
                {tag.slug}
              </label>
            )}
          </For>
        </fieldset>
      </Show>
    </DialogForm>
  );
}

/** The versions of one secret, newest first, a page at a time; any older one can be restored. */
function History(props: { secret: Secret; onRestored: () => void }) {
  const dialog = useDialog();
  const [page, setPage] = createSignal(0);
  const [shown, setShown] = createSignal<Record<number, boolean>>({});
  const restoring = createAction();
  const [versions] = createResource(
    () => ({ id: props.secret.id, page: page() }),
    (q) =>
      api<{ secretVersions: SecretVersion[] }>('GET', `/api/v1/secret/${q.id}/secret-versions`, { query: { offset: q.page * HISTORY_PAGE, limit: HISTORY_PAGE + 1 } }).then(
        (r) => r.secretVersions,
      ),
  );
  const latest = () => props.secret.version;
  const restore = (v: SecretVersion) =>
    restoring.run(async () => {
      await api('POST', `/api/v1/secret/${props.secret.id}/secret-versions/${v.version}/restore`, { body: {} });
      props.onRestored();
      dialog.close();
    }, v.version);
  return (
    <>
      <ErrorText message={restoring.error()} />
      <Loaded of={versions}>
        {(list) => (
          <>
            <Table columns={['Version', 'Value', 'When']} actions each={list().slice(0, HISTORY_PAGE)}>
              {(v) => (
                <tr>
                  <td>
                    <Badge tone={v.version === latest() ? 'good' : 'neutral'}>v{v.version}</Badge>
                    <Show when={v.secretKey !== props.secret.secretKey}>
                      <div class="muted-text small mono">{v.secretKey}</div>
                    </Show>
                  </td>
                  <td>
                    <div class="value-line">
                      <Show when={shown()[v.version]} fallback={<span class="masked" aria-label="Hidden value">••••••••</span>}>
                        <code class="value">{v.secretValue}</code>
                      </Show>
                      <IconButton
                        icon={shown()[v.version] ? 'eye-off' : 'eye'}
                        label={`${shown()[v.version] ? 'Hide' : 'Reveal'} value of version ${v.version}`}
                        pressed={!!shown()[v.version]}
                        onClick={() => setShown((s) => ({ ...s, [v.version]: !s[v.version] }))}
                      />
                    </div>
                  </td>
                  <td class="nowrap small">{formatDate(v.createdAt)}</td>
                  <td class="col-actions">
                    <Show when={v.version !== latest()} fallback={<span class="muted-text small">current</span>}>
                      <Button size="sm" busy={restoring.running() === v.version} aria-label={`Restore version ${v.version}`} onClick={() => void restore(v)}>
                        <Icon name="history" /> Restore
                      </Button>
                    </Show>
                  </td>
                </tr>
              )}
            </Table>
            <Pager page={page()} pageSize={HISTORY_PAGE} hasMore={list().length > HISTORY_PAGE} onPage={setPage} label="History pages" />
            <p class="muted-text small">Restoring makes the chosen version's value the newest version; history is kept.</p>
          </>
        )}
      </Loaded>
    </>
  );
}

function FolderForm(props: { scope: Scope; onSaved: (name: string) => void }) {
  const dialog = useDialog();
  const [name, setName] = createSignal('');
  const submit = async () => {
    await api('POST', '/api/v2/folders', { body: { projectId: props.scope.projectId, environment: props.scope.environment, path: props.scope.secretPath, name: name().trim() } });
    const n = name().trim();
    dialog.close();
    props.onSaved(n);
  };
  return (
    <DialogForm onSubmit={submit} submitLabel="Create folder">
      <TextField
        label="Folder name"
        hint={
          <>
            Created in {props.scope.environment} <span class="mono">{props.scope.secretPath}</span>.
          </>
        }
        class="mono"
        required
        maxlength="64"
        value={name()}
        onValue={setName}
        autocomplete="off"
      />
    </DialogForm>
  );
}

/** Imports another folder (environment and path) of the project into this one. */
function ImportForm(props: { scope: Scope; environments: string[]; onSaved: () => void }) {
  const dialog = useDialog();
  const [environment, setEnvironment] = createSignal(props.environments.find((e) => e !== props.scope.environment) ?? props.environments[0] ?? '');
  const [from, setFrom] = createSignal('/');
  const envId = useId('import-env');
  const submit = async () => {
    await api('POST', '/api/v1/secret-imports', {
      body: { projectId: props.scope.projectId, environment: props.scope.environment, path: props.scope.secretPath, import: { environment: environment(), path: normalisePath(from()) } },
    });
    props.onSaved();
    dialog.close();
  };
  return (
    <DialogForm onSubmit={submit} submitLabel="Import">
      <p class="muted-text small">
        Into <strong>{props.scope.environment}</strong> <span class="mono">{props.scope.secretPath}</span>: its readers also get the secrets of the folder chosen here.
      </p>
      <Field label="From environment" for={envId}>
        <select id={envId} value={environment()} onChange={(e) => setEnvironment(e.currentTarget.value)}>
          <For each={props.environments}>{(e) => <option value={e}>{e}</option>}</For>
        </select>
      </Field>
      <TextField label="From path" class="mono" required maxlength="1024" value={from()} onValue={setFrom} autocomplete="off" spellcheck={false} />
    </DialogForm>
  );
}

/** The project's tags: create one (slug), delete one (secrets no longer carry it). */
function TagsForm(props: { projectId: string; tags: Tag[]; onChanged: () => void }) {
  const [slug, setSlug] = createSignal('');
  const action = createAction();
  const create = async () => {
    await api('POST', `/api/v1/projects/${props.projectId}/tags`, { body: { slug: slug().trim() } });
    setSlug('');
    props.onChanged();
  };
  const remove = (tag: Tag) =>
    action.run(async () => {
      await api('DELETE', `/api/v1/projects/${props.projectId}/tags/${encodeURIComponent(tag.id)}`);
      props.onChanged();
    });
  return (
    <div class="stack">
      <ErrorText message={action.error()} />
      <Show when={props.tags.length > 0} fallback={<p class="muted-text small">No tags yet.</p>}>
        <ul class="folders" aria-label="Project tags">
          <For each={props.tags}>
            {(tag) => (
              <li class="folder-row">
                <span class="tag-chip">{tag.slug}</span>
                <IconButton icon="trash" label={`Delete tag ${tag.slug}`} title="Delete tag" danger onClick={() => void remove(tag)} />
              </li>
            )}
          </For>
        </ul>
      </Show>
      <form class="stack" onSubmit={submitWith(action, async () => await create())}>
        <TextField label="New tag" class="mono" required maxlength="64" value={slug()} onValue={setSlug} autocomplete="off" spellcheck={false} />
        <Button type="submit" size="sm" variant="primary" busy={action.busy()}>
          <Icon name="plus" /> Create tag
        </Button>
      </form>
    </div>
  );
}

/** "3 secrets", or "1 of 3 secrets" while a filter hides some. */
function countText(shown: number, total: number): string {
  return shown === total ? plural(total, 'secret') : `${shown} of ${plural(total, 'secret')}`;
}
