// An identity's authentication settings, beside its page (Identities.tsx): Universal Auth's
// token settings, JWT Auth and OIDC Auth configurations, and the projects it belongs to.
// Each form sends only what the API takes and shows the API's reason next to the fields.
import { createResource, createSignal, Show, type JSX } from 'solid-js';
import { api, ApiError, type Project } from '../api';
import { Badge, Button, Confirm, createAction, Empty, ErrorText, Field, Link, Loaded, submitWith, Table, TextField, useId } from '../components';

/** A trusted IP range as the API answers it. */
export interface TrustedIp {
  ipAddress: string;
  type: 'ipv4' | 'ipv6';
  prefix?: number;
}

export interface UniversalAuthSettings {
  clientId: string;
  accessTokenTTL: number;
  accessTokenMaxTTL: number;
  accessTokenNumUsesLimit: number;
  clientSecretTrustedIps: TrustedIp[];
  accessTokenTrustedIps: TrustedIp[];
}

const ipText = (list: TrustedIp[]) => list.map((i) => (i.prefix === undefined ? i.ipAddress : `${i.ipAddress}/${i.prefix}`)).join(', ');
/** "10.0.0.0/8, 192.168.1.7" (commas or new lines) as the API's list; empty means "anywhere". */
const ipList = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((ipAddress) => ({ ipAddress }));
const ANYWHERE = [{ ipAddress: '0.0.0.0/0' }, { ipAddress: '::/0' }];

/** A whole number field; `''` is sent as absent. */
function NumberField(props: { label: string; hint?: JSX.Element; value: string; onValue: (v: string) => void; invalid?: boolean }) {
  return <TextField label={props.label} hint={props.hint} inputmode="numeric" value={props.value} onValue={props.onValue} invalid={props.invalid} autocomplete="off" />;
}

function wholeNumber(name: string, v: string): number {
  if (!/^\d+$/.test(v.trim())) throw new Error(`${name} must be a whole number`);
  return Number(v.trim());
}

/** Universal Auth's token settings: lifetimes, use limit, trusted IPs. */
export function UniversalAuthSettingsForm(props: { base: string; settings: UniversalAuthSettings; onSaved: () => void }) {
  const s = props.settings;
  const [ttl, setTtl] = createSignal(String(s.accessTokenTTL));
  const [maxTtl, setMaxTtl] = createSignal(String(s.accessTokenMaxTTL));
  const [uses, setUses] = createSignal(String(s.accessTokenNumUsesLimit));
  const [loginIps, setLoginIps] = createSignal(ipText(s.clientSecretTrustedIps));
  const [tokenIps, setTokenIps] = createSignal(ipText(s.accessTokenTrustedIps));
  const [saved, setSaved] = createSignal(false);
  const action = createAction();
  const save = async () => {
    setSaved(false);
    const login = ipList(loginIps());
    const token = ipList(tokenIps());
    await api('PATCH', props.base, {
      body: {
        accessTokenTTL: wholeNumber('Access-token lifetime', ttl()),
        accessTokenMaxTTL: wholeNumber('Maximum lifetime', maxTtl()),
        accessTokenNumUsesLimit: wholeNumber('Uses per access token', uses()),
        clientSecretTrustedIps: login.length ? login : ANYWHERE,
        accessTokenTrustedIps: token.length ? token : ANYWHERE,
      },
    });
    setSaved(true);
    props.onSaved();
  };
  return (
    <form class="stack" onSubmit={submitWith(action, save)} aria-label="Universal Auth settings">
      <div class="row-3">
        <NumberField label="Access-token lifetime (seconds)" value={ttl()} onValue={setTtl} hint={`${hours(Number(ttl()))}`} />
        <NumberField label="Maximum lifetime with renewals (seconds)" value={maxTtl()} onValue={setMaxTtl} hint={`${hours(Number(maxTtl()))}`} />
        <NumberField label="Uses per access token" value={uses()} onValue={setUses} hint="0: no limit" />
      </div>
      <TextField label="Logins allowed from" class="mono" value={loginIps()} onValue={setLoginIps} hint="IP addresses or CIDR ranges, separated by commas. Empty: anywhere." autocomplete="off" />
      <TextField label="Access tokens usable from" class="mono" value={tokenIps()} onValue={setTokenIps} hint="IP addresses or CIDR ranges, separated by commas. Empty: anywhere." autocomplete="off" />
      <ErrorText message={action.error()} />
      <div class="actions-left">
        <Button type="submit" variant="primary" busy={action.busy()}>
          Save settings
        </Button>
        <Show when={saved()}>
          <span class="ok-text" role="status">
            Saved
          </span>
        </Show>
      </div>
    </form>
  );
}

function hours(seconds: number): string {
  if (!Number.isFinite(seconds)) return '';
  if (seconds === 0) return 'no limit';
  if (seconds % 86400 === 0) return `${seconds / 86400} day${seconds === 86400 ? '' : 's'}`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hour${seconds === 3600 ? '' : 's'}`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

// ---- JWT Auth and OIDC Auth --------------------------------------------------------------

type Method = 'jwt-auth' | 'oidc-auth';
interface TokenAuthConfig {
  boundIssuer: string;
  boundAudiences: string;
  boundClaims: Record<string, string>;
  boundSubject: string;
  accessTokenTTL: number;
  accessTokenMaxTTL: number;
  accessTokenNumUsesLimit: number;
  accessTokenTrustedIps: TrustedIp[];
  // JWT Auth
  configurationType?: 'static' | 'jwks';
  jwksUrl?: string;
  jwksCaCert?: string;
  publicKeys?: string[];
  // OIDC Auth
  oidcDiscoveryUrl?: string;
  caCert?: string;
}

const LABEL: Record<Method, string> = { 'jwt-auth': 'JWT Auth', 'oidc-auth': 'OIDC Auth' };
const KEY: Record<Method, string> = { 'jwt-auth': 'identityJwtAuth', 'oidc-auth': 'identityOidcAuth' };

/** One JWT-based method of an identity: attached or not, its configuration, Remove. */
export function TokenAuthPanel(props: { method: Method; identityId: string; onChanged: () => void }) {
  const path = () => `/api/v1/auth/${props.method}/identities/${encodeURIComponent(props.identityId)}`;
  const [config, { refetch }] = createResource(
    () => props.identityId,
    () =>
      api<Record<string, TokenAuthConfig>>('GET', path()).then(
        (r) => r[KEY[props.method]]!,
        (err) => {
          if (err instanceof ApiError && err.status === 404) return null;
          throw err;
        },
      ),
  );
  const [editing, setEditing] = createSignal(false);
  const [removing, setRemoving] = createSignal(false);
  const label = LABEL[props.method];
  return (
    <section class="panel" aria-labelledby={`h-${props.method}`}>
      <h2 id={`h-${props.method}`}>{label}</h2>
      <p class="muted-text small">
        {props.method === 'jwt-auth'
          ? 'A workload logs in with a JWT signed by a key you trust (static public keys or a JWKS URL), with no stored secret.'
          : 'A workload logs in with an ID token of an OpenID Connect provider (GitHub Actions, GitLab, a Kubernetes cluster), with no stored secret.'}
      </p>
      <Loaded of={config}>
        {(c) => (
          <Show
            when={c() && !editing()}
            fallback={
              <Show when={editing() || c()} fallback={<Button onClick={() => setEditing(true)}>Configure {label}</Button>}>
                <TokenAuthForm
                  method={props.method}
                  path={path()}
                  current={c() ?? undefined}
                  onCancel={() => setEditing(false)}
                  onSaved={() => {
                    setEditing(false);
                    void refetch();
                    props.onChanged();
                  }}
                />
              </Show>
            }
          >
            <TokenAuthSummary method={props.method} config={c()!} />
            <div class="actions-left">
              <Button onClick={() => setEditing(true)}>Edit {label}</Button>
              <Button variant="ghost" onClick={() => setRemoving(true)}>
                Remove {label}
              </Button>
            </div>
          </Show>
        )}
      </Loaded>
      <Confirm
        open={removing()}
        title={`Remove ${label}`}
        message={<p>Workloads logging in with {label} can no longer do so, and the access tokens it issued stop working at once.</p>}
        confirmLabel={`Remove ${label}`}
        onClose={() => setRemoving(false)}
        onConfirm={async () => {
          await api('DELETE', path(), { body: {} });
          await refetch();
          props.onChanged();
        }}
      />
    </section>
  );
}

function TokenAuthSummary(props: { method: Method; config: TokenAuthConfig }) {
  const c = () => props.config;
  const claims = () => Object.entries(c().boundClaims);
  return (
    <dl class="facts">
      <Show when={props.method === 'oidc-auth'}>
        <dt>Discovery URL</dt>
        <dd class="mono">{c().oidcDiscoveryUrl}</dd>
      </Show>
      <Show when={props.method === 'jwt-auth'}>
        <dt>Keys</dt>
        <dd>{c().configurationType === 'jwks' ? <span class="mono">{c().jwksUrl}</span> : `${c().publicKeys?.length ?? 0} static public key(s)`}</dd>
      </Show>
      <dt>Issuer</dt>
      <dd class="mono">{c().boundIssuer || (props.method === 'oidc-auth' ? 'the discovery document’s issuer' : '—')}</dd>
      <dt>Subject</dt>
      <dd class="mono">{c().boundSubject || '—'}</dd>
      <dt>Claims</dt>
      <dd class="mono">{claims().length ? claims().map(([k, v]) => `${k}=${v}`).join('; ') : '—'}</dd>
      <dt>Audiences</dt>
      <dd class="mono">{c().boundAudiences || '—'}</dd>
      <dt>Access tokens</dt>
      <dd>
        live {hours(c().accessTokenTTL)}, at most {hours(c().accessTokenMaxTTL)}; {c().accessTokenNumUsesLimit === 0 ? 'unlimited uses' : `${c().accessTokenNumUsesLimit} uses`}
      </dd>
    </dl>
  );
}

const claimsText = (claims: Record<string, string>) =>
  Object.entries(claims)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
function claimsOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`Bound claims: "${line.trim()}" is not name=value`);
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}
/** PEM blocks pasted one after the other. */
const pemsOf = (text: string) => text.match(/-----BEGIN [^-]+-----[\s\S]*?-----END [^-]+-----/g) ?? (text.trim() ? [text.trim()] : []);

function TokenAuthForm(props: { method: Method; path: string; current?: TokenAuthConfig; onSaved: () => void; onCancel: () => void }) {
  const c = props.current;
  const jwt = props.method === 'jwt-auth';
  const [type, setType] = createSignal<'static' | 'jwks'>(c?.configurationType ?? 'jwks');
  const [jwksUrl, setJwksUrl] = createSignal(c?.jwksUrl ?? '');
  const [publicKeys, setPublicKeys] = createSignal((c?.publicKeys ?? []).join('\n'));
  const [discovery, setDiscovery] = createSignal(c?.oidcDiscoveryUrl ?? '');
  const [caCert, setCaCert] = createSignal((jwt ? c?.jwksCaCert : c?.caCert) ?? '');
  const [issuer, setIssuer] = createSignal(c?.boundIssuer ?? '');
  const [subject, setSubject] = createSignal(c?.boundSubject ?? '');
  const [claims, setClaims] = createSignal(claimsText(c?.boundClaims ?? {}));
  const [audiences, setAudiences] = createSignal(c?.boundAudiences ?? '');
  const [ttl, setTtl] = createSignal(String(c?.accessTokenTTL ?? 3600));
  const [maxTtl, setMaxTtl] = createSignal(String(c?.accessTokenMaxTTL ?? 86400));
  const [uses, setUses] = createSignal(String(c?.accessTokenNumUsesLimit ?? 0));
  const [tokenIps, setTokenIps] = createSignal(ipText(c?.accessTokenTrustedIps ?? []));
  const action = createAction();
  const ruleId = useId('rule');
  const bindErrorId = useId('binderr');
  const ids = { type: useId('ctype'), keys: useId('pkeys'), ca: useId('ca'), claims: useId('claims') };
  /** The API's refusal when it is about what the configuration binds: shown by those fields. */
  const bindingError = () => {
    const e = action.error();
    return e && /must bind|boundIssuer|boundSubject|boundClaims/.test(e) ? e : undefined;
  };
  const label = LABEL[props.method];

  const save = async () => {
    const token = ipList(tokenIps());
    const body: Record<string, unknown> = {
      boundIssuer: issuer(),
      boundSubject: subject(),
      boundClaims: claimsOf(claims()),
      boundAudiences: audiences(),
      accessTokenTTL: wholeNumber('Access-token lifetime', ttl()),
      accessTokenMaxTTL: wholeNumber('Maximum lifetime', maxTtl()),
      accessTokenNumUsesLimit: wholeNumber('Uses per access token', uses()),
      accessTokenTrustedIps: token.length ? token : ANYWHERE,
    };
    if (jwt) {
      body.configurationType = type();
      // The other kind's fields are emptied: a PATCH keeps what it does not name.
      if (type() === 'jwks') Object.assign(body, { jwksUrl: jwksUrl(), jwksCaCert: caCert(), publicKeys: [] });
      else Object.assign(body, { publicKeys: pemsOf(publicKeys()), jwksUrl: '', jwksCaCert: '' });
    } else {
      body.oidcDiscoveryUrl = discovery();
      body.caCert = caCert();
    }
    await api(c ? 'PATCH' : 'POST', props.path, { body });
    props.onSaved();
  };

  return (
    <form class="stack" onSubmit={submitWith(action, save)} aria-label={`${label} configuration`}>
      <Show when={jwt}>
        <Field label="Keys" for={ids.type}>
          <select id={ids.type} value={type()} onChange={(e) => setType(e.currentTarget.value as 'static' | 'jwks')}>
            <option value="jwks">A JWKS URL</option>
            <option value="static">Static public keys</option>
          </select>
        </Field>
        <Show
          when={type() === 'jwks'}
          fallback={
            <Field label="Public keys (PEM)" for={ids.keys} hint="One or more PEM public keys, one after the other.">
              <textarea id={ids.keys} class="mono" rows="5" value={publicKeys()} onInput={(e) => setPublicKeys(e.currentTarget.value)} />
            </Field>
          }
        >
          <TextField label="JWKS URL" class="mono" type="url" value={jwksUrl()} onValue={setJwksUrl} placeholder="https://issuer.example/.well-known/jwks.json" autocomplete="off" />
        </Show>
      </Show>
      <Show when={!jwt}>
        <TextField label="Discovery URL" class="mono" type="url" required value={discovery()} onValue={setDiscovery} placeholder="https://token.actions.githubusercontent.com" autocomplete="off" hint="Its /.well-known/openid-configuration names the keys." />
      </Show>
      <Show when={!jwt || type() === 'jwks'}>
        <Field label="CA certificate (optional, PEM)" for={ids.ca} hint="Only when the issuer's TLS certificate is not publicly trusted.">
          <textarea id={ids.ca} class="mono" rows="3" value={caCert()} onInput={(e) => setCaCert(e.currentTarget.value)} />
        </Field>
      </Show>

      <fieldset class="bindings" aria-describedby={ruleId}>
        <legend>What a token must say</legend>
        <p id={ruleId} class="hint rule-text">
          {jwt ? 'Bind the issuer, and ' : 'The issuer is the discovery document’s unless you name one; also '}bind the subject or at least one claim. An audience alone is not enough: public
          issuers such as GitHub Actions and GitLab give anyone on the internet a token of any audience they ask for, so a configuration that binds nothing more is refused.
        </p>
        <TextField label={jwt ? 'Issuer' : 'Issuer (optional)'} class="mono" value={issuer()} onValue={setIssuer} invalid={!!bindingError() && jwt && !issuer()} errorId={bindErrorId} autocomplete="off" />
        <TextField
          label="Subject"
          class="mono"
          value={subject()}
          onValue={setSubject}
          hint="Exact values or globs, separated by commas, e.g. repo:acme/app:ref:refs/heads/main"
          invalid={!!bindingError() && !subject() && !claims().trim()}
          errorId={bindErrorId}
          autocomplete="off"
        />
        <Field label="Claims" for={ids.claims} hint="One name=value per line; values may be globs, separated by commas.">
          <textarea
            id={ids.claims}
            class="mono"
            rows="3"
            value={claims()}
            onInput={(e) => setClaims(e.currentTarget.value)}
            aria-invalid={bindingError() && !subject() && !claims().trim() ? 'true' : undefined}
            aria-describedby={bindingError() ? bindErrorId : undefined}
          />
        </Field>
        <TextField label="Audiences (optional)" class="mono" value={audiences()} onValue={setAudiences} hint="Separated by commas." autocomplete="off" />
        <ErrorText message={bindingError()} id={bindErrorId} />
      </fieldset>

      <div class="row-3">
        <NumberField label="Access-token lifetime (seconds)" value={ttl()} onValue={setTtl} hint={hours(Number(ttl()))} />
        <NumberField label="Maximum lifetime with renewals (seconds)" value={maxTtl()} onValue={setMaxTtl} hint={hours(Number(maxTtl()))} />
        <NumberField label="Uses per access token" value={uses()} onValue={setUses} hint="0: no limit" />
      </div>
      <TextField label="Access tokens usable from" class="mono" value={tokenIps()} onValue={setTokenIps} hint="IP addresses or CIDR ranges, separated by commas. Empty: anywhere." autocomplete="off" />
      <ErrorText message={bindingError() ? undefined : action.error()} />
      <div class="actions-left">
        <Button onClick={() => props.onCancel()}>Cancel</Button>
        <Button type="submit" variant="primary" busy={action.busy()}>
          {c ? `Save ${label}` : `Attach ${label}`}
        </Button>
      </div>
    </form>
  );
}

// ---- Projects ------------------------------------------------------------------------------

interface Membership {
  project: Project;
  role: string;
}

/** The projects the identity is a member of, with its role in each (read per project: the superadmin sees every project). */
export function IdentityProjects(props: { identityId: string }) {
  const [memberships] = createResource(
    () => props.identityId,
    async (id) => {
      const { projects } = await api<{ projects: Project[] }>('GET', '/api/v1/projects');
      const rows = await Promise.all(
        projects.map(async (p) => {
          const r = await api<{ identityMemberships: { identityId: string; role: string }[] }>('GET', `/api/v1/projects/${p.id}/memberships/identities`);
          const m = r.identityMemberships.find((x) => x.identityId === id);
          return m ? { project: p, role: m.role } : undefined;
        }),
      );
      return rows.filter((r): r is Membership => r !== undefined).sort((a, b) => a.project.name.localeCompare(b.project.name));
    },
  );
  return (
    <section class="panel" aria-labelledby="h-projects">
      <h2 id="h-projects">Projects</h2>
      <Loaded of={memberships} empty={<Empty title="In no project">Add it on a project's Members tab to let it read secrets.</Empty>}>
        {(list) => (
          <Table label="Projects of this identity" columns={['Project', 'Role']} each={list()}>
            {(m) => (
              <tr>
                <td>
                  <Link href={`/projects/${m.project.id}/members`}>{m.project.name}</Link>
                </td>
                <td>
                  <Badge tone={m.role === 'no-access' ? 'warn' : 'accent'}>{m.role}</Badge>
                </td>
              </tr>
            )}
          </Table>
        )}
      </Loaded>
    </section>
  );
}

