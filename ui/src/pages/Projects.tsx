// Projects: list (paged), create with the slug shown before saving.
import { createMemo, createResource, createSignal, For, Show } from 'solid-js';
import { api, errorText, slugify, type Project } from '../api';
import { Badge, Button, Dialog, Empty, ErrorText, Field, formatDate, Icon, Link, Loading, Pager, SearchBox, useId } from '../components';
import { navigate } from '../router';

const PAGE = 12;

export function ProjectsPage() {
  const [projects, { refetch }] = createResource(() => api<{ projects: Project[] }>('GET', '/api/v1/projects').then((r) => r.projects));
  const [page, setPage] = createSignal(0);
  const [filter, setFilter] = createSignal('');
  const [creating, setCreating] = createSignal(false);
  const filtered = createMemo(() => {
    const f = filter().trim().toLowerCase();
    const list = [...(projects() ?? [])].sort((a, b) => a.name.localeCompare(b.name));
    return f ? list.filter((p) => p.name.toLowerCase().includes(f) || p.slug.includes(f)) : list;
  });
  const visible = () => filtered().slice(page() * PAGE, page() * PAGE + PAGE);

  return (
    <section class="page">
      <div class="page-head">
        <div>
          <h1>Projects</h1>
          <p class="muted-text">Each project holds secrets per environment and folder.</p>
        </div>
        <Button variant="primary" onClick={() => setCreating(true)}>
          <Icon name="plus" /> New project
        </Button>
      </div>

      <Show when={!projects.loading || projects()} fallback={<Loading />}>
        <ErrorText message={projects.error ? errorText(projects.error) : undefined} />
        <Show
          when={(projects() ?? []).length > 0}
          fallback={
            <Show when={!projects.error}>
              <Empty title="No projects yet">Create a project to start storing secrets.</Empty>
            </Show>
          }
        >
          <div class="toolbar">
            <SearchBox
              label="Filter projects"
              placeholder="Filter projects"
              value={filter()}
              onInput={(v) => {
                setFilter(v);
                setPage(0);
              }}
            />
          </div>
          <ul class="cards" aria-label="Projects">
            <For each={visible()}>
              {(p) => (
                <li class="card project-card">
                  <Link href={`/projects/${p.id}/secrets`} class="card-link">
                    <span class="card-title">{p.name}</span>
                  </Link>
                  <span class="mono muted-text">{p.slug}</span>
                  <div class="card-foot">
                    <span class="chips">
                      <For each={p.environments}>{(e) => <Badge>{e.slug}</Badge>}</For>
                    </span>
                    <span class="muted-text small">Created {formatDate(p.createdAt)}</span>
                  </div>
                </li>
              )}
            </For>
          </ul>
          <Show when={filtered().length === 0}>
            <p class="muted-text">No project matches “{filter()}”.</p>
          </Show>
          <Pager page={page()} pageSize={PAGE} total={filtered().length} onPage={setPage} label="Projects pages" />
        </Show>
      </Show>

      <CreateProjectDialog
        open={creating()}
        onClose={() => setCreating(false)}
        onCreated={(p) => {
          setCreating(false);
          void refetch();
          navigate(`/projects/${p.id}/secrets`);
        }}
      />
    </section>
  );
}

function CreateProjectDialog(props: { open: boolean; onClose: () => void; onCreated: (p: Project) => void }) {
  const [name, setName] = createSignal('');
  const [slug, setSlug] = createSignal('');
  const [slugEdited, setSlugEdited] = createSignal(false);
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const ids = { name: useId('pname'), slug: useId('pslug') };
  const effectiveSlug = () => (slugEdited() ? slug() : slugify(name()));

  const close = () => {
    setName('');
    setSlug('');
    setSlugEdited(false);
    setError(undefined);
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<{ project: Project }>('POST', '/api/v1/projects', { body: { projectName: name(), slug: effectiveSlug() || undefined } });
      setName('');
      setSlug('');
      setSlugEdited(false);
      props.onCreated(r.project);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={props.open} title="New project" onClose={close}>
      <form class="stack" onSubmit={submit}>
        <Field label="Project name" for={ids.name}>
          <input id={ids.name} required maxlength="256" value={name()} onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" />
        </Field>
        <Field
          label="Slug"
          for={ids.slug}
          hint={
            <>
              Used by machines to name the project (<span class="mono">workspaceSlug</span>). Derived from the name until you change it.
            </>
          }
        >
          <input
            id={ids.slug}
            class="mono"
            value={effectiveSlug()}
            pattern="[a-z0-9]+(-[a-z0-9]+)*"
            maxlength="64"
            onInput={(e) => {
              setSlugEdited(true);
              setSlug(e.currentTarget.value);
            }}
            autocomplete="off"
          />
        </Field>
        <p class="muted-text small">
          Environments <span class="mono">dev</span>, <span class="mono">staging</span> and <span class="mono">prod</span> are created with it.
        </p>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy()}>
            Create project
          </Button>
        </div>
      </form>
    </Dialog>
  );
}
