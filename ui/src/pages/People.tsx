// People (superadmin): who can log in to this UI, and adding a person with an initial
// password that the administrator hands over. Project roles are given in each project's
// Members tab.
import { createResource, createSignal, Show } from 'solid-js';
import { api, listPeople, personName, type Person } from '../api';
import { Badge, Button, createAction, createListView, Credential, Dialog, DialogForm, Empty, formatDate, Icon, ListTable, Loaded, PageHead, SearchBox, ShownOnce, TextField, useId, valueOf } from '../components';

const PAGE = 20;

export function PeoplePage() {
  const [people, { refetch }] = createResource(listPeople);
  const list = createListView({
    items: () => valueOf(people),
    pageSize: PAGE,
    order: (a, b) => Number(b.superAdmin) - Number(a.superAdmin) || personName(a).localeCompare(personName(b)),
    matches: (p, q) => personName(p).toLowerCase().includes(q) || p.email.includes(q),
  });
  const [creating, setCreating] = createSignal(false);

  return (
    <section class="page">
      <PageHead title="People" newLabel="New person" onNew={() => setCreating(true)}>
        <p class="muted-text">Everyone who logs in to this admin UI. Give a person a role per project in the project’s Members tab.</p>
      </PageHead>
      <Loaded of={people}>
        {(all) => (
          <>
            <Show when={all().length > PAGE}>
              <div class="toolbar">
                <SearchBox label="Filter people" placeholder="Filter by name or email" value={list.query()} onInput={list.setQuery} />
              </div>
            </Show>
            <Show when={list.filtered().length > 0} fallback={<Empty title="Nobody matches">Try another name or email.</Empty>}>
              <ListTable list={list} flush label="People" columns={['Name', 'Email', 'Access', 'Added']} pager="People pages">
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
              </ListTable>
            </Show>
            <Show when={all().length === 1}>
              <p class="muted-text small">Only the administrator so far. Add the people who should read or manage secrets in some projects.</p>
            </Show>
          </>
        )}
      </Loaded>
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

interface Created {
  person: Person;
  password: string;
}

/** The form, then (once the person exists) their initial password, shown once. */
function NewPersonDialog(props: { open: boolean; onClose: () => void; onCreated: () => void }) {
  const [created, setCreated] = createSignal<Created>();
  const close = () => {
    setCreated(undefined);
    props.onClose();
  };
  return (
    <Dialog open={props.open} title={created() ? 'Person added' : 'New person'} onClose={close} wide={created() !== undefined}>
      <Show
        when={created()}
        fallback={
          <NewPersonForm
            onCreated={(c) => {
              setCreated(c);
              props.onCreated();
            }}
          />
        }
      >
        {(c) => (
          <ShownOnce
            warning={`Hand the initial password to ${personName(c().person)} securely.`}
            why="In person or through a password manager, not by email or chat. It is not shown again: only a hash is stored."
            doneLabel="Done"
            onDone={close}
          >
            <Credential label="Email" value={c().person.email} testId="person-email" />
            <Credential label="Initial password" value={c().password} testId="person-password" />
            <p class="muted-text small">They can see no project until you add them in a project’s Members tab.</p>
          </ShownOnce>
        )}
      </Show>
    </Dialog>
  );
}

function NewPersonForm(props: { onCreated: (c: Created) => void }) {
  const [email, setEmail] = createSignal('');
  const [firstName, setFirstName] = createSignal('');
  const [lastName, setLastName] = createSignal('');
  const [password, setPassword] = createSignal('');
  const [showPassword, setShowPassword] = createSignal(false);
  const action = createAction();
  const ids = { pw: useId('ppw'), note: useId('pnote'), err: useId('perr') };
  /** Which field an API validation message is about ("email is not a valid address"). */
  const errorFor = (field: 'email' | 'firstName' | 'password') => {
    const m = action.error();
    if (!m) return false;
    if (field === 'email') return /^email\b|user with this email/i.test(m);
    return m.startsWith(field);
  };

  return (
    <DialogForm
      label="New person"
      submitLabel="Add person"
      action={action}
      errorId={ids.err}
      onSubmit={async () => {
        const r = await api<{ user: Person }>('POST', '/api/v1/users', {
          body: { email: email().trim(), password: password(), firstName: firstName().trim(), lastName: lastName().trim() || undefined },
        });
        props.onCreated({ person: r.user, password: password() });
      }}
    >
      <div class="row-2">
        <TextField label="First name" required maxlength="64" autocomplete="off" value={firstName()} onValue={setFirstName} invalid={errorFor('firstName')} errorId={ids.err} />
        <TextField label="Last name (optional)" maxlength="64" autocomplete="off" value={lastName()} onValue={setLastName} />
      </div>
      <TextField
        label="Email"
        hint="They log in with this address."
        type="email"
        required
        maxlength="320"
        autocomplete="off"
        value={email()}
        onValue={setEmail}
        invalid={errorFor('email')}
        errorId={ids.err}
      />
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
    </DialogForm>
  );
}
