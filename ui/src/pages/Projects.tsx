// Projects: list (paged), create with the slug shown before saving.
import { createResource, createSignal, For } from 'solid-js';
import { api, slugify, type Project } from '../api';
import { Badge, createListView, Dialog, DialogForm, Empty, formatDate, Link, ListPager, Loaded, PageHead, SearchBox, TextField, useDialog, valueOf } from '../components';
import { navigate } from '../router';

export function ProjectsPage() {
  const [projects, { refetch }] = createResource(() => api<{ projects: Project[] }>('GET', '/api/v1/projects').then((r) => r.projects));
  const list = createListView({
    items: () => valueOf(projects),
    pageSize: 12,
    order: (a, b) => a.name.localeCompare(b.name),
    matches: (p, q) => p.name.toLowerCase().includes(q) || p.slug.includes(q),
  });
  const [creating, setCreating] = createSignal(false);

  return (
    <section class="page">
      <PageHead title="Projects" newLabel="New project" onNew={() => setCreating(true)}>
        <p class="muted-text">Each project holds secrets per environment and folder.</p>
      </PageHead>

      <Loaded of={projects} empty={<Empty title="No projects yet">Create a project to start storing secrets.</Empty>}>
        {() => (
          <>
            <div class="toolbar">
              <SearchBox label="Filter projects" placeholder="Filter projects" value={list.query()} onInput={list.setQuery} />
            </div>
            <ul class="cards" aria-label="Projects">
              <For each={list.visible()}>
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
            <ListPager list={list} label="Projects pages" noun="project" />
          </>
        )}
      </Loaded>

      <Dialog open={creating()} title="New project" onClose={() => setCreating(false)}>
        <CreateProjectForm
          onCreated={(p) => {
            void refetch();
            navigate(`/projects/${p.id}/secrets`);
          }}
        />
      </Dialog>
    </section>
  );
}

function CreateProjectForm(props: { onCreated: (p: Project) => void }) {
  const dialog = useDialog();
  const [name, setName] = createSignal('');
  const [slug, setSlug] = createSignal<string>();
  /** Derived from the name until the user types one. */
  const effectiveSlug = () => slug() ?? slugify(name());

  return (
    <DialogForm
      submitLabel="Create project"
      onSubmit={async () => {
        const r = await api<{ project: Project }>('POST', '/api/v1/projects', { body: { projectName: name(), slug: effectiveSlug() || undefined } });
        dialog.close();
        props.onCreated(r.project);
      }}
    >
      <TextField label="Project name" required maxlength="256" value={name()} onValue={setName} autocomplete="off" />
      <TextField
        label="Slug"
        hint={
          <>
            Used by machines to name the project (<span class="mono">workspaceSlug</span>). Derived from the name until you change it.
          </>
        }
        class="mono"
        value={effectiveSlug()}
        onValue={setSlug}
        pattern="[a-z0-9]+(-[a-z0-9]+)*"
        maxlength="64"
        autocomplete="off"
      />
      <p class="muted-text small">
        Environments <span class="mono">dev</span>, <span class="mono">staging</span> and <span class="mono">prod</span> are created with it.
      </p>
    </DialogForm>
  );
}
