// Machine identities (superadmin): list, create with Universal Auth, the credentials
// shown once, new credentials, revoke, delete.
import { createMemo, createResource, createSignal, For, Show } from 'solid-js';
import { api, ApiError, errorText, type ClientSecretData, type Identity, type UniversalAuth } from '../api';
import { Badge, Button, Confirm, CopyButton, Dialog, Empty, ErrorText, Field, formatDate, Icon, Link, Loading, Pager, useId } from '../components';
import { navigate } from '../router';

const PAGE = 20;

interface Credentials {
  identityName: string;
  clientId: string;
  clientSecret: string;
}

/** The one time a client secret is visible. */
function CredentialsDialog(props: { credentials: Credentials | undefined; onClose: () => void }) {
  return (
    <Dialog open={props.credentials !== undefined} title={`Credentials for ${props.credentials?.identityName ?? ''}`} onClose={props.onClose} wide>
      <div class="stack">
        <div class="callout callout-warn" role="alert">
          <Icon name="alert" />
          <div>
            <strong>Copy the client secret now: it will not be shown again.</strong>
            <p>Only a hash is stored. If it is lost, generate new credentials and revoke this one.</p>
          </div>
        </div>
        <div class="cred">
          <span class="cred-label" id="cred-client-id-label">
            Client ID
          </span>
          <div class="cred-value">
            <code data-testid="client-id" aria-labelledby="cred-client-id-label">
              {props.credentials?.clientId}
            </code>
            <CopyButton label="Copy client ID" showText text={() => props.credentials?.clientId ?? ''} />
          </div>
        </div>
        <div class="cred">
          <span class="cred-label" id="cred-client-secret-label">
            Client secret
          </span>
          <div class="cred-value">
            <code data-testid="client-secret" aria-labelledby="cred-client-secret-label">
              {props.credentials?.clientSecret}
            </code>
            <CopyButton label="Copy client secret" showText text={() => props.credentials?.clientSecret ?? ''} />
          </div>
        </div>
        <p class="muted-text small">
          Machines log in with <span class="mono">POST /api/v1/auth/universal-auth/login</span> and these two values.
        </p>
        <div class="actions">
          <Button variant="primary" onClick={props.onClose}>
            I have stored the secret
          </Button>
        </div>
      </div>
    </Dialog>
  );
}

export function IdentitiesPage() {
  const [identities, { refetch }] = createResource(() =>
    api<{ identities: { identity: Identity }[] }>('GET', '/api/v1/identities').then((r) => r.identities.map((x) => x.identity)),
  );
  const [page, setPage] = createSignal(0);
  const [creating, setCreating] = createSignal(false);
  const [credentials, setCredentials] = createSignal<Credentials>();
  const sorted = createMemo(() => [...(identities() ?? [])].sort((a, b) => a.name.localeCompare(b.name)));

  return (
    <section class="page">
      <div class="page-head">
        <div>
          <h1>Machine identities</h1>
          <p class="muted-text">Operators, CI jobs and services log in as an identity with Universal Auth credentials.</p>
        </div>
        <Button variant="primary" onClick={() => setCreating(true)}>
          <Icon name="plus" /> New identity
        </Button>
      </div>
      <Show when={!identities.loading || identities()} fallback={<Loading />}>
        <ErrorText message={identities.error ? errorText(identities.error) : undefined} />
        <Show when={sorted().length > 0} fallback={<Show when={!identities.error}><Empty title="No machine identities yet">Create one for each machine that reads secrets.</Empty></Show>}>
          <div class="panel flush">
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Authentication</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                <For each={sorted().slice(page() * PAGE, page() * PAGE + PAGE)}>
                  {(i) => (
                    <tr>
                      <td>
                        <Link href={`/identities/${i.id}`} class="cell-title">
                          {i.name}
                        </Link>
                      </td>
                      <td>
                        <Show when={i.authMethods.length > 0} fallback={<Badge tone="warn">none</Badge>}>
                          <For each={i.authMethods}>{(m) => <Badge tone="accent">{m}</Badge>}</For>
                        </Show>
                      </td>
                      <td class="small muted-text">{formatDate(i.createdAt)}</td>
                    </tr>
                  )}
                </For>
              </tbody>
            </table>
          </div>
          <Pager page={page()} pageSize={PAGE} total={sorted().length} onPage={setPage} label="Identities pages" />
        </Show>
      </Show>
      <CreateIdentityDialog
        open={creating()}
        onClose={() => setCreating(false)}
        onCreated={(c) => {
          setCreating(false);
          void refetch();
          setCredentials(c);
        }}
      />
      <CredentialsDialog credentials={credentials()} onClose={() => setCredentials(undefined)} />
    </section>
  );
}

function CreateIdentityDialog(props: { open: boolean; onClose: () => void; onCreated: (c: Credentials) => void }) {
  const [name, setName] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const id = useId('iname');
  const close = () => {
    setName('');
    setError(undefined);
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    let identityId: string | undefined;
    try {
      const { identity } = await api<{ identity: Identity }>('POST', '/api/v1/identities', { body: { name: name().trim() } });
      identityId = identity.id;
      const { identityUniversalAuth } = await api<{ identityUniversalAuth: UniversalAuth }>('POST', `/api/v1/auth/universal-auth/identities/${identity.id}`, { body: {} });
      const { clientSecret } = await api<{ clientSecret: string }>('POST', `/api/v1/auth/universal-auth/identities/${identity.id}/client-secrets`, {
        body: { description: 'Created with the identity' },
      });
      setName('');
      props.onCreated({ identityName: identity.name, clientId: identityUniversalAuth.clientId, clientSecret });
    } catch (err) {
      setError(identityId ? `The identity was created, but its credentials were not: ${errorText(err)}. Open it to try again.` : errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={props.open} title="New machine identity" onClose={close}>
      <form class="stack" onSubmit={submit}>
        <Field label="Name" for={id} hint="Universal Auth is attached and a first client secret is issued.">
          <input id={id} required maxlength="256" value={name()} onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" />
        </Field>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={close}>Cancel</Button>
          <Button type="submit" variant="primary" busy={busy()}>
            Create with Universal Auth
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

export function IdentityPage(props: { identityId: string }) {
  const base = () => `/api/v1/auth/universal-auth/identities/${encodeURIComponent(props.identityId)}`;
  const [identity] = createResource(
    () => props.identityId,
    (id) => api<{ identity: Identity }>('GET', `/api/v1/identities/${encodeURIComponent(id)}`).then((r) => r.identity),
  );
  const [ua, { refetch: refetchUa }] = createResource(
    () => props.identityId,
    () =>
      api<{ identityUniversalAuth: UniversalAuth }>('GET', base()).then(
        (r) => r.identityUniversalAuth,
        (err) => {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        },
      ),
  );
  const [secrets, { refetch: refetchSecrets }] = createResource(
    () => (ua() ? props.identityId : undefined),
    () => api<{ clientSecretData: ClientSecretData[] }>('GET', `${base()}/client-secrets`).then((r) => r.clientSecretData),
  );
  const [credentials, setCredentials] = createSignal<Credentials>();
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const [revoking, setRevoking] = createSignal<ClientSecretData>();
  const [deleting, setDeleting] = createSignal(false);
  const [description, setDescription] = createSignal('');
  const descId = useId('desc');

  const attach = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await api('POST', base(), { body: {} });
      await refetchUa();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const generate = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<{ clientSecret: string }>('POST', `${base()}/client-secrets`, { body: { description: description().trim() || undefined } });
      setDescription('');
      setCredentials({ identityName: identity()?.name ?? '', clientId: ua()!.clientId, clientSecret: r.clientSecret });
      void refetchSecrets();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="page">
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href="/identities">Machine identities</Link>
        <span aria-hidden="true">/</span>
        <span aria-current="page">{identity()?.name ?? '…'}</span>
      </nav>
      <Show when={identity()} fallback={identity.error ? <ErrorText message={errorText(identity.error)} /> : <Loading />}>
        <div class="page-head">
          <div>
            <h1>{identity()!.name}</h1>
            <p class="muted-text small mono">{identity()!.id}</p>
          </div>
          <Button variant="danger" onClick={() => setDeleting(true)}>
            <Icon name="trash" /> Delete identity…
          </Button>
        </div>
        <div class="stack-lg">
          <div class="panel">
            <h2>Universal Auth</h2>
            <Show when={!ua.loading || ua() !== undefined} fallback={<Loading />}>
              <ErrorText message={ua.error ? errorText(ua.error) : undefined} />
              <Show
                when={ua()}
                fallback={
                  <Show when={!ua.error}>
                    <p class="muted-text">Universal Auth is not attached yet.</p>
                    <Button variant="primary" busy={busy()} onClick={() => void attach()}>
                      Attach Universal Auth
                    </Button>
                  </Show>
                }
              >
                <div class="cred">
                  <span class="cred-label" id="ua-client-id">
                    Client ID
                  </span>
                  <div class="cred-value">
                    <code aria-labelledby="ua-client-id">{ua()!.clientId}</code>
                    <CopyButton label="Copy client ID" showText text={() => ua()!.clientId} />
                  </div>
                </div>
                <p class="muted-text small">
                  Access tokens live {Math.round(ua()!.accessTokenTTL / 3600)} h (at most {Math.round(ua()!.accessTokenMaxTTL / 3600)} h with renewals).
                </p>
                <form class="inline-form" onSubmit={generate} aria-label="Generate new credentials">
                  <Field label="Description (optional)" for={descId}>
                    <input id={descId} value={description()} onInput={(e) => setDescription(e.currentTarget.value)} placeholder="e.g. cluster prod, rotated May" />
                  </Field>
                  <Button type="submit" variant="primary" busy={busy()}>
                    <Icon name="key" /> Generate new credentials
                  </Button>
                </form>
              </Show>
              <ErrorText message={error()} />
            </Show>
          </div>

          <Show when={ua()}>
            <div class="panel">
              <h2>Client secrets</h2>
              <p class="muted-text small">Values are never shown after creation; the prefix helps tell them apart.</p>
              <ErrorText message={secrets.error ? errorText(secrets.error) : undefined} />
              <Show when={secrets()} fallback={<Show when={!secrets.error}><Loading /></Show>}>
                <Show when={secrets()!.length > 0} fallback={<Empty title="No client secrets">Generate credentials to let a machine log in.</Empty>}>
                  <table class="table" aria-label="Client secrets">
                    <thead>
                      <tr>
                        <th scope="col">Secret</th>
                        <th scope="col">Created</th>
                        <th scope="col">Last used</th>
                        <th scope="col">Status</th>
                        <th scope="col" class="col-actions">
                          <span class="sr-only">Actions</span>
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      <For each={[...secrets()!].sort((a, b) => b.createdAt.localeCompare(a.createdAt))}>
                        {(c) => (
                          <tr>
                            <td>
                              <span class="mono">{c.clientSecretPrefix}…</span>
                              <Show when={c.description}>
                                <div class="muted-text small">{c.description}</div>
                              </Show>
                            </td>
                            <td class="small">{formatDate(c.createdAt)}</td>
                            <td class="small">{c.lastUsedAt ? formatDate(c.lastUsedAt) : 'never'}</td>
                            <td>{c.isClientSecretRevoked ? <Badge tone="bad">revoked</Badge> : <Badge tone="good">active</Badge>}</td>
                            <td class="col-actions">
                              <Show when={!c.isClientSecretRevoked}>
                                <Button size="sm" variant="ghost" aria-label={`Revoke client secret ${c.clientSecretPrefix}`} onClick={() => setRevoking(c)}>
                                  Revoke
                                </Button>
                              </Show>
                            </td>
                          </tr>
                        )}
                      </For>
                    </tbody>
                  </table>
                </Show>
              </Show>
            </div>
          </Show>
        </div>
      </Show>
      <CredentialsDialog credentials={credentials()} onClose={() => setCredentials(undefined)} />
      <Confirm
        open={revoking() !== undefined}
        title="Revoke client secret"
        message={
          <>
            Machines using <span class="mono">{revoking()?.clientSecretPrefix}…</span> can no longer log in, and the access tokens issued with it stop working at once.
          </>
        }
        confirmLabel="Revoke"
        onClose={() => setRevoking(undefined)}
        onConfirm={async () => {
          await api('POST', `${base()}/client-secrets/${revoking()!.id}/revoke`, { body: {} });
          await refetchSecrets();
        }}
      />
      <Confirm
        open={deleting()}
        title="Delete identity"
        message={
          <>
            Delete <strong>{identity()?.name}</strong>? Its credentials and project memberships go with it.
          </>
        }
        typeToConfirm={identity()?.name}
        confirmLabel="Delete identity"
        onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await api('DELETE', `/api/v1/identities/${encodeURIComponent(props.identityId)}`, { body: {} });
          navigate('/identities');
        }}
      />
    </section>
  );
}
