// A project's custom roles (project admins): list, create and edit (rules over secrets:
// actions, environment, path glob, allow or deny), delete. A role is assigned to a member
// in the Members tab, by its slug.
import { createResource, createSignal, For, Index, Show } from 'solid-js';
import { api, type Project, type ProjectRole, type RoleRule } from '../api';
import { Badge, Button, Confirm, createAction, Empty, ErrorText, Field, Icon, Loaded, submitWith, Table, TextField, useId } from '../components';

/** The actions a rule row offers, with Infisical's names. */
const ACTIONS: { id: string; label: string }[] = [
  { id: 'describeSecret', label: 'see names' },
  { id: 'readValue', label: 'read values' },
  { id: 'create', label: 'create' },
  { id: 'edit', label: 'edit' },
  { id: 'delete', label: 'delete' },
];

interface RuleRow {
  environment: string;
  secretPath: string;
  actions: string[];
  deny: boolean;
}

const newRow = (): RuleRow => ({ environment: '', secretPath: '/**', actions: ['describeSecret', 'readValue'], deny: false });

/** A stored rule as a row of the editor ('read' is both of its halves). */
function toRow(r: RoleRule): RuleRow {
  const actions = r.action.flatMap((a) => (a === 'read' ? ['describeSecret', 'readValue'] : [a]));
  return { environment: r.conditions?.environment ?? '', secretPath: r.conditions?.secretPath?.$glob ?? '/**', actions: [...new Set(actions)], deny: r.inverted === true };
}

function toRule(row: RuleRow): RoleRule {
  const conditions: NonNullable<RoleRule['conditions']> = {};
  if (row.environment) conditions.environment = row.environment;
  if (row.secretPath.trim() && row.secretPath.trim() !== '/**') conditions.secretPath = { $glob: row.secretPath.trim() };
  return { subject: 'secrets', action: row.actions, ...(Object.keys(conditions).length ? { conditions } : {}), inverted: row.deny };
}

/** One line a reader can take in: "allow read values, create in prod at /app/**". */
export function ruleText(r: RoleRule): string {
  const row = toRow(r);
  const what = ACTIONS.filter((a) => row.actions.includes(a.id)).map((a) => a.label).join(', ');
  return `${row.deny ? 'deny' : 'allow'} ${what} in ${row.environment || 'any environment'} at ${row.secretPath}`;
}

export function RolesScreen(props: { project: Project }) {
  const base = () => `/api/v1/projects/${props.project.id}/roles`;
  const [roles, { refetch }] = createResource(
    () => props.project.id,
    () => api<{ roles: ProjectRole[] }>('GET', base()).then((r) => r.roles),
  );
  /** The role being edited: undefined (none), 'new', or the role. */
  const [editing, setEditing] = createSignal<'new' | ProjectRole>();
  const [deleting, setDeleting] = createSignal<ProjectRole>();

  return (
    <div class="stack-lg">
      <div class="panel">
        <div class="panel-head">
          <h2>Custom roles</h2>
          <Button variant="primary" onClick={() => setEditing('new')}>
            <Icon name="plus" /> New role
          </Button>
        </div>
        <p class="muted-text">
          A custom role is a list of rules: what a member may do with secrets, in which environment and under which folder path (<span class="mono">/app/**</span> is /app
          and everything below it, <span class="mono">/</span> the root folder alone). A deny wins over every allow. Give it to a member in the Members tab.
        </p>
        <Loaded of={roles} empty={<Empty title="No custom role yet">The built-in roles (admin, member, viewer, no-access) apply until you add one.</Empty>}>
          {(list) => (
            <Table columns={['Role', 'Slug']} actions each={list()}>
              {(r) => (
                <tr>
                  <td>
                    <div class="cell-title">{r.name}</div>
                    <Show when={r.description}>
                      <div class="muted-text small">{r.description}</div>
                    </Show>
                  </td>
                  <td class="mono">{r.slug}</td>
                  <td class="col-actions">
                    <Button size="sm" variant="ghost" aria-label={`Edit ${r.name}`} onClick={() => setEditing(r)}>
                      <Icon name="edit" /> Edit
                    </Button>
                    <Button size="sm" variant="ghost" aria-label={`Delete ${r.name}`} onClick={() => setDeleting(r)}>
                      <Icon name="trash" /> Delete
                    </Button>
                  </td>
                </tr>
              )}
            </Table>
          )}
        </Loaded>
      </div>

      <Show when={editing()} keyed>
        {(e) => (
          <RoleEditor
            project={props.project}
            base={base()}
            role={e === 'new' ? undefined : e}
            onDone={() => {
              setEditing(undefined);
              void refetch();
            }}
          />
        )}
      </Show>

      <Confirm
        open={deleting() !== undefined}
        title="Delete role"
        message={
          <>
            Delete the role <strong>{deleting()?.name}</strong>? A role a member still holds cannot be deleted: give them another role first.
          </>
        }
        confirmLabel="Delete role"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          await api('DELETE', `${base()}/${deleting()!.id}`);
          await refetch();
        }}
      />
    </div>
  );
}

function RoleEditor(props: { project: Project; base: string; role?: ProjectRole; onDone: () => void }) {
  const [slug, setSlug] = createSignal(props.role?.slug ?? '');
  const [name, setName] = createSignal(props.role?.name ?? '');
  const [description, setDescription] = createSignal(props.role?.description ?? '');
  const [rows, setRows] = createSignal<RuleRow[]>(props.role ? [] : [newRow()]);
  const loading = createAction();
  const saving = createAction();
  // The list leaves rules out (as Infisical's): an edit loads the role by slug.
  if (props.role) {
    void loading.run(async () => {
      const r = await api<{ role: ProjectRole }>('GET', `${props.base}/slug/${encodeURIComponent(props.role!.slug)}`);
      setRows((r.role.permissions ?? []).map(toRow));
    });
  }
  const update = (i: number, change: Partial<RuleRow>) => setRows((all) => all.map((r, n) => (n === i ? { ...r, ...change } : r)));
  const save = async () => {
    const body = { slug: slug().trim(), name: name().trim(), description: description().trim() || null, permissions: rows().map(toRule) };
    if (props.role) await api('PATCH', `${props.base}/${props.role.id}`, { body });
    else await api('POST', props.base, { body });
    props.onDone();
  };
  const envId = useId('rule-env');

  return (
    <div class="panel">
      <h2>{props.role ? `Edit ${props.role.name}` : 'New role'}</h2>
      <form class="stack" onSubmit={submitWith(saving, save)} aria-label={props.role ? 'Edit role' : 'New role'}>
        <div class="inline-form align-top">
          <TextField label="Name" value={name()} onValue={setName} required maxLength={64} />
          <TextField label="Slug" class="mono" value={slug()} onValue={setSlug} required maxLength={64} hint="lower-case letters, digits, hyphens" />
          <TextField label="Description" value={description()} onValue={setDescription} maxLength={1000} />
        </div>
        <h3>Rules</h3>
        <Show when={rows().length === 0 && !loading.busy()}>
          <p class="muted-text">No rule: members with this role see no secret.</p>
        </Show>
        <Index each={rows()}>
          {(row, i) => (
            <fieldset class="rule" aria-label={`Rule ${i + 1}`}>
              <legend>Rule {i + 1}</legend>
              <div class="inline-form align-top">
                <Field label="Effect" for={`${envId}-effect-${i}`}>
                  <select id={`${envId}-effect-${i}`} value={row().deny ? 'deny' : 'allow'} onChange={(e) => update(i, { deny: e.currentTarget.value === 'deny' })}>
                    <option value="allow">allow</option>
                    <option value="deny">deny</option>
                  </select>
                </Field>
                <Field label="Environment" for={`${envId}-${i}`}>
                  <select id={`${envId}-${i}`} value={row().environment} onChange={(e) => update(i, { environment: e.currentTarget.value })}>
                    <option value="">any environment</option>
                    <For each={props.project.environments}>{(env) => <option value={env.slug}>{env.name}</option>}</For>
                    <Show when={row().environment && !props.project.environments.some((env) => env.slug === row().environment)}>
                      <option value={row().environment}>{row().environment}</option>
                    </Show>
                  </select>
                </Field>
                <TextField label="Secret path (glob)" class="mono" value={row().secretPath} onValue={(v) => update(i, { secretPath: v })} />
              </div>
              <div class="checks" role="group" aria-label={`Actions of rule ${i + 1}`}>
                <For each={ACTIONS}>
                  {(a) => (
                    <label class="check">
                      <input
                        type="checkbox"
                        checked={row().actions.includes(a.id)}
                        onChange={(e) => update(i, { actions: e.currentTarget.checked ? [...row().actions, a.id] : row().actions.filter((x) => x !== a.id) })}
                      />{' '}
                      {a.label}
                    </label>
                  )}
                </For>
                <Show when={row().deny}>
                  <Badge tone="bad">deny wins</Badge>
                </Show>
                <Button size="sm" variant="ghost" aria-label={`Remove rule ${i + 1}`} onClick={() => setRows((all) => all.filter((_, n) => n !== i))}>
                  <Icon name="trash" /> Remove rule
                </Button>
              </div>
            </fieldset>
          )}
        </Index>
        <div>
          <Button variant="ghost" onClick={() => setRows((all) => [...all, newRow()])}>
            <Icon name="plus" /> Add rule
          </Button>
        </div>
        <ErrorText message={saving.error() ?? loading.error()} />
        <div class="inline-form">
          <Button type="submit" variant="primary" busy={saving.busy()} disabled={loading.busy()}>
            {props.role ? 'Save role' : 'Create role'}
          </Button>
          <Button variant="ghost" onClick={() => props.onDone()}>
            Cancel
          </Button>
        </div>
      </form>
    </div>
  );
}
