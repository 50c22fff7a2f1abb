// Machine identities (superadmin): list, create with Universal Auth, the credentials
// shown once, new credentials, revoke, delete.
import { createResource, createSignal, For, Show } from 'solid-js';
import { api, ApiError, errorText, listIdentities, type ClientSecretData, type Identity, type UniversalAuth } from '../api';
import { Badge, Button, Confirm, createAction, createListView, Credential, Dialog, DialogForm, Empty, ErrorText, formatDate, Icon, Link, ListTable, Loaded, PageHead, ShownOnce, submitWith, Table, TextField, useDialog, valueOf } from '../components';
import { navigate } from '../router';
import { IdentityProjects, TokenAuthPanel, UniversalAuthSettingsForm, type UniversalAuthSettings } from './IdentityAuth';

interface Credentials {
  identityName: string;
  clientId: string;
  clientSecret: string;
}

/** The one time a client secret is visible. */
function CredentialsDialog(props: { credentials: Credentials | undefined; onClose: () => void }) {
  return (
    <Dialog open={props.credentials !== undefined} title={`Credentials for ${props.credentials?.identityName ?? ''}`} onClose={props.onClose} wide>
      <ShownOnce
        warning="Copy the client secret now: it will not be shown again."
        why="Only a hash is stored. If it is lost, generate new credentials and revoke this one."
        doneLabel="I have stored the secret"
        onDone={props.onClose}
      >
        <Credential label="Client ID" value={props.credentials?.clientId ?? ''} testId="client-id" />
        <Credential label="Client secret" value={props.credentials?.clientSecret ?? ''} testId="client-secret" />
        <p class="muted-text small">
          Machines log in with <span class="mono">POST /api/v1/auth/universal-auth/login</span> and these two values.
        </p>
      </ShownOnce>
    </Dialog>
  );
}

export function IdentitiesPage() {
  const [identities, { refetch }] = createResource(listIdentities);
  const list = createListView({ items: () => valueOf(identities), pageSize: 20, order: (a, b) => a.name.localeCompare(b.name) });
  const [creating, setCreating] = createSignal(false);
  const [credentials, setCredentials] = createSignal<Credentials>();

  return (
    <section class="page">
      <PageHead title="Machine identities" newLabel="New identity" onNew={() => setCreating(true)}>
        <p class="muted-text">Operators, CI jobs and services log in as an identity with Universal Auth credentials.</p>
      </PageHead>
      <Loaded of={identities} empty={<Empty title="No machine identities yet">Create one for each machine that reads secrets.</Empty>}>
        {() => (
          <ListTable list={list} flush columns={['Name', 'Authentication', 'Created']} pager="Identities pages">
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
          </ListTable>
        )}
      </Loaded>
      <Dialog open={creating()} title="New machine identity" onClose={() => setCreating(false)}>
        <CreateIdentityForm
          onCreated={(c) => {
            void refetch();
            setCredentials(c);
          }}
        />
      </Dialog>
      <CredentialsDialog credentials={credentials()} onClose={() => setCredentials(undefined)} />
    </section>
  );
}

function CreateIdentityForm(props: { onCreated: (c: Credentials) => void }) {
  const dialog = useDialog();
  const [name, setName] = createSignal('');
  const create = async () => {
    let identityId: string | undefined;
    try {
      const { identity } = await api<{ identity: Identity }>('POST', '/api/v1/identities', { body: { name: name().trim() } });
      identityId = identity.id;
      const { identityUniversalAuth } = await api<{ identityUniversalAuth: UniversalAuth }>('POST', `/api/v1/auth/universal-auth/identities/${identity.id}`, { body: {} });
      const { clientSecret } = await api<{ clientSecret: string }>('POST', `/api/v1/auth/universal-auth/identities/${identity.id}/client-secrets`, {
        body: { description: 'Created with the identity' },
      });
      dialog.close();
      props.onCreated({ identityName: identity.name, clientId: identityUniversalAuth.clientId, clientSecret });
    } catch (err) {
      if (!identityId) throw err;
      throw new Error(`The identity was created, but its credentials were not: ${errorText(err)}. Open it to try again.`);
    }
  };
  return (
    <DialogForm submitLabel="Create with Universal Auth" onSubmit={create}>
      <TextField label="Name" hint="Universal Auth is attached and a first client secret is issued." required maxlength="256" value={name()} onValue={setName} autocomplete="off" />
    </DialogForm>
  );
}

export function IdentityPage(props: { identityId: string }) {
  const base = () => `/api/v1/auth/universal-auth/identities/${encodeURIComponent(props.identityId)}`;
  const [identity, { refetch: refetchIdentity }] = createResource(
    () => props.identityId,
    (id) => api<{ identity: Identity }>('GET', `/api/v1/identities/${encodeURIComponent(id)}`).then((r) => r.identity),
  );
  const [ua, { refetch: refetchUa }] = createResource(
    () => props.identityId,
    () =>
      api<{ identityUniversalAuth: UniversalAuthSettings }>('GET', base()).then(
        (r) => r.identityUniversalAuth,
        (err) => {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        },
      ),
  );
  const [secrets, { refetch: refetchSecrets }] = createResource(
    () => (valueOf(ua) ? props.identityId : undefined),
    () => api<{ clientSecretData: ClientSecretData[] }>('GET', `${base()}/client-secrets`).then((r) => r.clientSecretData),
  );
  const [credentials, setCredentials] = createSignal<Credentials>();
  // Attaching Universal Auth and generating credentials share one busy state and error.
  const action = createAction();
  const [revoking, setRevoking] = createSignal<ClientSecretData>();
  const [deleting, setDeleting] = createSignal(false);
  const [description, setDescription] = createSignal('');
  const [secretTtl, setSecretTtl] = createSignal('');
  const [secretUses, setSecretUses] = createSignal('');

  const attach = async () => {
    await api('POST', base(), { body: {} });
    await refetchUa();
  };
  const generate = async () => {
    const whole = (name: string, v: string) => {
      if (!v.trim()) return undefined;
      if (!/^\d+$/.test(v.trim())) throw new Error(`${name} must be a whole number`);
      return Number(v.trim());
    };
    const r = await api<{ clientSecret: string }>('POST', `${base()}/client-secrets`, {
      body: { description: description().trim() || undefined, ttl: whole('Secret lifetime', secretTtl()), numUsesLimit: whole('Logins per secret', secretUses()) },
    });
    setDescription('');
    setSecretTtl('');
    setSecretUses('');
    setCredentials({ identityName: valueOf(identity)?.name ?? '', clientId: valueOf(ua)!.clientId, clientSecret: r.clientSecret });
    void refetchSecrets();
  };

  return (
    <section class="page">
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href="/identities">Machine identities</Link>
        <span aria-hidden="true">/</span>
        <span aria-current="page">{valueOf(identity)?.name ?? '…'}</span>
      </nav>
      <Loaded of={identity}>
        {(idn) => (
          <>
            <PageHead
              title={idn().name}
              action={
                <Button variant="danger" onClick={() => setDeleting(true)}>
                  <Icon name="trash" /> Delete identity…
                </Button>
              }
            >
              <p class="muted-text small mono">{idn().id}</p>
            </PageHead>
            <div class="stack-lg">
              <div class="panel">
                <h2>Universal Auth</h2>
                <Loaded of={ua}>
                  {(attached) => (
                    <Show
                      when={attached()}
                      fallback={
                        <>
                          <p class="muted-text">Universal Auth is not attached yet.</p>
                          <Button variant="primary" busy={action.busy()} onClick={() => void action.run(attach)}>
                            Attach Universal Auth
                          </Button>
                        </>
                      }
                    >
                      {(u) => (
                        <>
                          <Credential label="Client ID" value={u().clientId} />
                          <h3>Access tokens and logins</h3>
                          <UniversalAuthSettingsForm base={base()} settings={u()} onSaved={() => void refetchUa()} />
                          <h3>New credentials</h3>
                          <form class="inline-form" onSubmit={submitWith(action, generate)} aria-label="Generate new credentials">
                            <TextField label="Description (optional)" value={description()} onValue={setDescription} placeholder="e.g. cluster prod, rotated May" />
                            <TextField label="Secret lifetime (seconds; empty: never expires)" inputmode="numeric" value={secretTtl()} onValue={setSecretTtl} autocomplete="off" />
                            <TextField label="Logins per secret (empty: no limit)" inputmode="numeric" value={secretUses()} onValue={setSecretUses} autocomplete="off" />
                            <Button type="submit" variant="primary" busy={action.busy()}>
                              <Icon name="key" /> Generate new credentials
                            </Button>
                          </form>
                        </>
                      )}
                    </Show>
                  )}
                </Loaded>
                <ErrorText message={action.error()} />
              </div>

              <Show when={valueOf(ua)}>
                <div class="panel">
                  <h2>Client secrets</h2>
                  <p class="muted-text small">Values are never shown after creation; the prefix helps tell them apart.</p>
                  <Loaded of={secrets} empty={<Empty title="No client secrets">Generate credentials to let a machine log in.</Empty>}>
                    {(list) => (
                      <Table label="Client secrets" columns={['Secret', 'Created', 'Last used', 'Uses', 'Status']} actions each={[...list()].sort((a, b) => b.createdAt.localeCompare(a.createdAt))}>
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
                            <td class="small">
                              {c.numUses}
                              {c.numUsesLimit ? ` of ${c.numUsesLimit}` : ''}
                              <Show when={c.ttl}>
                                <div class="muted-text">expires {formatDate(new Date(Date.parse(c.createdAt) + c.ttl * 1000).toISOString())}</div>
                              </Show>
                            </td>
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
                      </Table>
                    )}
                  </Loaded>
                </div>
              </Show>
              <TokenAuthPanel method="oidc-auth" identityId={props.identityId} onChanged={() => void refetchIdentity()} />
              <TokenAuthPanel method="jwt-auth" identityId={props.identityId} onChanged={() => void refetchIdentity()} />
              <IdentityProjects identityId={props.identityId} />
            </div>
          </>
        )}
      </Loaded>
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
            Delete <strong>{valueOf(identity)?.name}</strong>? Its credentials and project memberships go with it.
          </>
        }
        typeToConfirm={valueOf(identity)?.name}
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
