// People (superadmin): who can log in to this UI, and adding a person with an initial
// password that the administrator hands over. Project roles are given in each project's
// Members tab.
import { createMemo, createResource, createSignal, For, Show } from 'solid-js';
import { api, errorText, personName, type Person } from '../api';
import { Badge, Button, CopyButton, Dialog, Empty, ErrorText, Field, formatDate, Icon, Loading, Pager, SearchBox, useId } from '../components';

const PAGE = 20;

export function PeoplePage() {
  const [people, { refetch }] = createResource(() => api<{ users: Person[] }>('GET', '/api/v1/users').then((r) => r.users));
  const [page, setPage] = createSignal(0);
  const [filter, setFilter] = createSignal('');
  const [creating, setCreating] = createSignal(false);
  const filtered = createMemo(() => {
    const f = filter().trim().toLowerCase();
    const list = [...(people() ?? [])].sort((a, b) => Number(b.superAdmin) - Number(a.superAdmin) || personName(a).localeCompare(personName(b)));
    return f ? list.filter((p) => personName(p).toLowerCase().includes(f) || p.email.includes(f)) : list;
  });

  return (
    <section class="page">
      <div class="page-head">
        <div>
          <h1>People</h1>
          <p class="muted-text">Everyone who logs in to this admin UI. Give a person a role per project in the project’s Members tab.</p>
        </div>
        <Button variant="primary" onClick={() => setCreating(true)}>
          <Icon name="plus" /> New person
        </Button>
      </div>
      <Show when={!people.loading || people()} fallback={<Loading />}>
        <ErrorText message={people.error ? errorText(people.error) : undefined} />
        <Show when={people()}>
          <Show when={people()!.length > PAGE}>
            <div class="toolbar">
              <SearchBox
                label="Filter people"
                placeholder="Filter by name or email"
                value={filter()}
                onInput={(v) => {
                  setFilter(v);
                  setPage(0);
                }}
              />
            </div>
          </Show>
          <Show when={filtered().length > 0} fallback={<Empty title="Nobody matches">Try another name or email.</Empty>}>
            <div class="panel flush">
              <table class="table" aria-label="People">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Email</th>
                    <th scope="col">Access</th>
                    <th scope="col">Added</th>
                  </tr>
                </thead>
                <tbody>
                  <For each={filtered().slice(page() * PAGE, page() * PAGE + PAGE)}>
                    {(p) => (
                      <tr data-email={p.email}>
                        <th scope="row" class="cell-title">
                          {personName(p)}
                        </th>
                        <td>{p.email}</td>
                        <td>
                          <Show when={p.superAdmin} fallback={<Badge>project roles</Badge>}>
                            <Badge tone="accent">
                              <Icon name="shield" /> administrator
                            </Badge>
                          </Show>
                        </td>
                        <td class="small muted-text nowrap">{formatDate(p.createdAt)}</td>
                      </tr>
                    )}
                  </For>
                </tbody>
              </table>
            </div>
            <Pager page={page()} pageSize={PAGE} total={filtered().length} onPage={setPage} label="People pages" />
          </Show>
          <Show when={people()!.length === 1}>
            <p class="muted-text small">Only the administrator so far. Add the people who should read or manage secrets in some projects.</p>
          </Show>
        </Show>
      </Show>
      <NewPersonDialog open={creating()} onClose={() => setCreating(false)} onCreated={() => void refetch()} />
    </section>
  );
}

/** 20 characters from an alphabet without look-alikes (about 115 bits). */
function generatePassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  const out: string[] = [];
  const buf = new Uint8Array(64);
  while (out.length < 20) {
    crypto.getRandomValues(buf);
    for (const b of buf) {
      // 57 symbols: drop bytes >= 228 (4 * 57) so that every symbol is equally likely
      if (b < 228 && out.length < 20) out.push(alphabet[b % alphabet.length]!);
    }
  }
  return out.join('');
}

function NewPersonDialog(props: { open: boolean; onClose: () => void; onCreated: () => void }) {
  const [email, setEmail] = createSignal('');
  const [firstName, setFirstName] = createSignal('');
  const [lastName, setLastName] = createSignal('');
  const [password, setPassword] = createSignal('');
  const [showPassword, setShowPassword] = createSignal(false);
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const [created, setCreated] = createSignal<{ person: Person; password: string }>();
  const ids = { email: useId('pemail'), first: useId('pfirst'), last: useId('plast'), pw: useId('ppw'), note: useId('pnote'), err: useId('perr') };
  /** Which field an API validation message is about ("email is not a valid address"). */
  const errorFor = (field: 'email' | 'firstName' | 'password') => {
    const m = error();
    if (!m) return false;
    if (field === 'email') return /^email\b|user with this email/i.test(m);
    return m.startsWith(field);
  };

  const reset = () => {
    setEmail('');
    setFirstName('');
    setLastName('');
    setPassword('');
    setShowPassword(false);
    setError(undefined);
    setCreated(undefined);
  };
  const close = () => {
    reset();
    props.onClose();
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<{ user: Person }>('POST', '/api/v1/users', {
        body: { email: email().trim(), password: password(), firstName: firstName().trim(), lastName: lastName().trim() || undefined },
      });
      setCreated({ person: r.user, password: password() });
      props.onCreated();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog open={props.open} title={created() ? 'Person added' : 'New person'} onClose={close} wide={created() !== undefined}>
      <Show
        when={created()}
        fallback={
          <form class="stack" onSubmit={submit} aria-label="New person">
            <div class="row-2">
              <Field label="First name" for={ids.first}>
                <input
                  id={ids.first}
                  required
                  maxlength="64"
                  autocomplete="off"
                  value={firstName()}
                  onInput={(e) => setFirstName(e.currentTarget.value)}
                  aria-invalid={errorFor('firstName') ? 'true' : undefined}
                  aria-describedby={errorFor('firstName') ? ids.err : undefined}
                />
              </Field>
              <Field label="Last name (optional)" for={ids.last}>
                <input id={ids.last} maxlength="64" autocomplete="off" value={lastName()} onInput={(e) => setLastName(e.currentTarget.value)} />
              </Field>
            </div>
            <Field label="Email" for={ids.email} hint="They log in with this address.">
              <input
                id={ids.email}
                type="email"
                required
                maxlength="320"
                autocomplete="off"
                value={email()}
                onInput={(e) => setEmail(e.currentTarget.value)}
                aria-invalid={errorFor('email') ? 'true' : undefined}
                aria-describedby={errorFor('email') ? ids.err : undefined}
              />
            </Field>
            <div class="field">
              <label for={ids.pw}>Initial password</label>
              <div class="input-with-actions">
                <input
                  id={ids.pw}
                  class="mono"
                  type={showPassword() ? 'text' : 'password'}
                  required
                  maxlength="256"
                  autocomplete="new-password"
                  spellcheck={false}
                  value={password()}
                  onInput={(e) => setPassword(e.currentTarget.value)}
                  aria-invalid={errorFor('password') ? 'true' : undefined}
                  aria-describedby={errorFor('password') ? `${ids.note} ${ids.err}` : ids.note}
                />
                <button
                  type="button"
                  class="icon-btn"
                  aria-label={showPassword() ? 'Hide password' : 'Show password'}
                  aria-pressed={showPassword()}
                  title={showPassword() ? 'Hide password' : 'Show password'}
                  onClick={() => setShowPassword((v) => !v)}
                >
                  <Icon name={showPassword() ? 'eye-off' : 'eye'} />
                </button>
                <Button
                  size="sm"
                  onClick={() => {
                    setPassword(generatePassword());
                    setShowPassword(true);
                  }}
                >
                  <Icon name="key" /> Generate
                </Button>
              </div>
              <p class="hint" id={ids.note}>
                At least 12 characters. Hand it over securely: in person or through a password manager, never in the same message as the email address.
              </p>
            </div>
            <ErrorText message={error()} id={ids.err} />
            <div class="actions">
              <Button onClick={close}>Cancel</Button>
              <Button type="submit" variant="primary" busy={busy()}>
                Add person
              </Button>
            </div>
          </form>
        }
      >
        {(c) => (
          <div class="stack">
            <div class="callout callout-warn" role="alert">
              <Icon name="alert" />
              <div>
                <strong>Hand the initial password to {personName(c().person)} securely.</strong>
                <p>In person or through a password manager, not by email or chat. It is not shown again: only a hash is stored.</p>
              </div>
            </div>
            <div class="cred">
              <span class="cred-label" id={`${ids.email}-label`}>
                Email
              </span>
              <div class="cred-value">
                <code data-testid="person-email" aria-labelledby={`${ids.email}-label`}>
                  {c().person.email}
                </code>
                <CopyButton label="Copy email" showText text={() => c().person.email} />
              </div>
            </div>
            <div class="cred">
              <span class="cred-label" id={`${ids.pw}-label`}>
                Initial password
              </span>
              <div class="cred-value">
                <code data-testid="person-password" aria-labelledby={`${ids.pw}-label`}>
                  {c().password}
                </code>
                <CopyButton label="Copy initial password" showText text={() => c().password} />
              </div>
            </div>
            <p class="muted-text small">They can see no project until you add them in a project’s Members tab.</p>
            <div class="actions">
              <Button variant="primary" onClick={close}>
                Done
              </Button>
            </div>
          </div>
        )}
      </Show>
    </Dialog>
  );
}
