// A project's webhooks (project admins): each one's target, scope and delivery state
// (idle, retrying with its next try, dead, disabled), with enable / disable (enabling
// resumes a dead one), a test delivery and delete; and a small form to add one. The
// signing key is sent once and never shown again (no answer carries it).
import { createResource, createSignal, For, Show } from 'solid-js';
import { api, type Project } from '../api';
import { Badge, Button, Confirm, createAction, Empty, ErrorText, Field, formatDate, Icon, Loaded, submitWith, Table, TextField, useId } from '../components';

export interface Webhook {
  id: string;
  url: string;
  environment: { id: string; name: string; slug: string };
  secretPath: string;
  type: string;
  isDisabled: boolean;
  lastStatus: 'success' | 'failed' | null;
  lastRunErrorMessage: string | null;
  delivery: {
    state: 'idle' | 'retrying' | 'dead' | 'disabled';
    attempts: number;
    nextAttemptAt: string | null;
    lastAttemptAt: string | null;
    lastEventId: number | null;
    deadAt: string | null;
  };
}

const TONES = { idle: 'good', retrying: 'warn', dead: 'bad', disabled: 'neutral' } as const;

export function WebhooksScreen(props: { project: Project }) {
  const [hooks, { refetch }] = createResource(
    () => props.project.id,
    (id) => api<{ webhooks: Webhook[] }>('GET', '/api/v1/webhooks', { query: { projectId: id } }).then((r) => r.webhooks),
  );
  const [deleting, setDeleting] = createSignal<Webhook>();
  const act = createAction();
  const run = (w: Webhook, task: () => Promise<unknown>) => act.run(async () => {
    await task();
    await refetch();
  }, w.id);

  return (
    <div class="stack-lg">
      <div class="panel">
        <div class="panel-head">
          <h2>Webhooks</h2>
          <Button variant="ghost" onClick={() => void refetch()}>
            Refresh
          </Button>
        </div>
        <p class="muted-text">
          Each change to secrets at a webhook's environment and path is sent to its URL, signed with its key (<span class="mono">x-infisical-signature</span>), and
          retried until it is taken. A webhook that fails for the whole retry period is dead until you enable it again; it then resumes where it stopped.
        </p>
        <ErrorText message={act.error()} />
        <Loaded of={hooks} empty={<Empty title="No webhook yet">Add one below.</Empty>}>
          {(list) => (
            <Table columns={['Target', 'Where', 'Delivery', 'Last attempt']} actions each={list()} label="Webhooks">
              {(w) => (
                <tr>
                  <td>
                    <div class="cell-title mono">{w.url}</div>
                    <div class="muted-text small">{w.type}</div>
                  </td>
                  <td>
                    {w.environment.slug} <span class="mono">{w.secretPath}</span>
                  </td>
                  <td>
                    <Badge tone={TONES[w.delivery.state]}>{w.delivery.state}</Badge>
                    <Show when={w.delivery.state === 'retrying'}>
                      <div class="muted-text small">
                        {w.delivery.attempts} failed, next try {formatDate(w.delivery.nextAttemptAt)}
                      </div>
                    </Show>
                    <Show when={w.lastRunErrorMessage}>
                      <div class="muted-text small">{w.lastRunErrorMessage}</div>
                    </Show>
                  </td>
                  <td>
                    {formatDate(w.delivery.lastAttemptAt)}
                    <Show when={w.delivery.lastEventId !== null}>
                      <div class="muted-text small">last event {w.delivery.lastEventId}</div>
                    </Show>
                  </td>
                  <td class="col-actions">
                    <Button size="sm" variant="ghost" busy={act.running() === w.id} onClick={() => void run(w, () => api('PATCH', `/api/v1/webhooks/${w.id}`, { body: { isDisabled: !(w.isDisabled || w.delivery.state === 'dead') } }))}>
                      {w.isDisabled || w.delivery.state === 'dead' ? 'Enable' : 'Disable'}
                    </Button>
                    <Button size="sm" variant="ghost" onClick={() => void run(w, () => api('POST', `/api/v1/webhooks/${w.id}/test`))}>
                      Test
                    </Button>
                    <Button size="sm" variant="ghost" aria-label={`Delete the webhook to ${w.url}`} onClick={() => setDeleting(w)}>
                      <Icon name="trash" /> Delete
                    </Button>
                  </td>
                </tr>
              )}
            </Table>
          )}
        </Loaded>
      </div>
      <NewWebhook project={props.project} onAdded={() => void refetch()} />
      <Confirm
        open={deleting() !== undefined}
        title="Delete webhook"
        message={<>Delete the webhook to <strong>{deleting()?.url}</strong>? Nothing more is sent to it.</>}
        confirmLabel="Delete webhook"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          await api('DELETE', `/api/v1/webhooks/${deleting()!.id}`);
          await refetch();
        }}
      />
    </div>
  );
}

function NewWebhook(props: { project: Project; onAdded: () => void }) {
  const [environment, setEnvironment] = createSignal(props.project.environments[0]?.slug ?? '');
  const [secretPath, setSecretPath] = createSignal('/**');
  const [url, setUrl] = createSignal('');
  const [key, setKey] = createSignal('');
  const saving = createAction();
  const envId = useId('webhook-env');
  return (
    <form
      class="panel stack"
      onSubmit={submitWith(saving, async () => {
        await api('POST', '/api/v1/webhooks', {
          body: { projectId: props.project.id, environment: environment(), secretPath: secretPath(), webhookUrl: url(), ...(key() ? { webhookSecretKey: key() } : {}) },
        });
        setUrl('');
        setKey('');
        props.onAdded();
      })}
    >
      <h2>New webhook</h2>
      <Field label="Environment" for={envId}>
        <select id={envId} value={environment()} onChange={(e) => setEnvironment(e.currentTarget.value)}>
          <For each={props.project.environments}>{(e) => <option value={e.slug}>{e.name}</option>}</For>
        </select>
      </Field>
      <TextField label="Secret path" hint="A folder, or a glob: /app/** is /app and everything below it" value={secretPath()} onValue={setSecretPath} />
      <TextField label="URL" type="url" required value={url()} onValue={setUrl} />
      <TextField label="Signing key" hint="Optional; sent once, never shown again" type="password" autocomplete="off" value={key()} onValue={setKey} />
      <ErrorText message={saving.error()} />
      <div>
        <Button variant="primary" type="submit" busy={saving.busy()}>
          <Icon name="plus" /> Add webhook
        </Button>
      </div>
    </form>
  );
}
