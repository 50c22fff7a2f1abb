// People (superadmin): who can log in to this UI, adding a person with an initial
// password that the administrator hands over, and containing a leaked password or a
// departing person: reset the password, disable, enable, delete. Each of these ends the
// person's sessions at once (the service does it, on every replica). Project roles are
// given in each project's Members tab.
import { createResource, createSignal, Show } from 'solid-js';
import { api, listPeople, personName, type Person } from '../api';
import { Badge, Button, Confirm, createAction, createListView, Credential, Dialog, DialogForm, Empty, ErrorText, formatDate, Icon, IconButton, ListTable, Loaded, PageHead, SearchBox, ShownOnce, TextField, useId, valueOf } from '../components';
import { user } from '../session';

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
  const [resetting, setResetting] = createSignal<Person>();
  const [disabling, setDisabling] = createSignal<Person>();
  const [deleting, setDeleting] = createSignal<Person>();
  const rowAction = createAction();
  const enable = (p: Person) =>
    rowAction.run(async () => {
      await api('POST', `/api/v1/users/${encodeURIComponent(p.id)}/enable`, { body: {} });
      await refetch();
    }, p.id);

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
              <ErrorText message={rowAction.error()} />
              <ListTable list={list} flush label="People" columns={['Name', 'Email', 'Access', 'Added']} actions pager="People pages">
                {(p) => (
                  <tr data-email={p.email} classList={{ 'row-disabled': p.disabled }}>
                    <th scope="row" class="cell-title">
                      {personName(p)}
                    </th>
                    <td>{p.email}</td>
                    <td>
                      <Show when={p.superAdmin} fallback={<Badge>project roles</Badge>}>
                        <Badge tone="accent">
                          <Icon name="shield" /> administrator
                        </Badge>
                      </Show>{' '}
                      <Show when={p.disabled}>
                        <Badge tone="bad">disabled</Badge>
                      </Show>
                    </td>
                    <td class="small muted-text nowrap">{formatDate(p.createdAt)}</td>
                    <td class="col-actions">
                      {/* Yourself: My account (your password); the last superadmin cannot be disabled or deleted. */}
                      <Show when={p.id !== user()?.id}>
                        <div class="row-actions">
                          <IconButton icon="key" label={`Reset password of ${p.email}`} title="Reset password" onClick={() => setResetting(p)} />
                          <Show
                            when={p.disabled}
                            fallback={
                              <IconButton icon="lock" label={`Disable ${p.email}`} title="Disable" onClick={() => setDisabling(p)} />
                            }
                          >
                            <Button size="sm" variant="ghost" aria-label={`Enable ${p.email}`} busy={rowAction.running() === p.id} onClick={() => void enable(p)}>
                              Enable
                            </Button>
                          </Show>
                          <IconButton icon="trash" label={`Delete ${p.email}`} title="Delete" danger onClick={() => setDeleting(p)} />
                        </div>
                      </Show>
                    </td>
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
      <ResetPasswordDialog person={resetting()} onClose={() => setResetting(undefined)} />
      <Confirm
        open={disabling() !== undefined}
        title="Disable person"
        message={
          <>
            <strong>{disabling() && personName(disabling()!)}</strong> can no longer log in, and every session they hold ends now. You can enable them again later; their project roles stay.
          </>
        }
        confirmLabel="Disable"
        onClose={() => setDisabling(undefined)}
        onConfirm={async () => {
          await api('POST', `/api/v1/users/${encodeURIComponent(disabling()!.id)}/disable`, { body: {} });
          await refetch();
        }}
      />
      <Confirm
        open={deleting() !== undefined}
        title="Delete person"
        message={
          <>
            Delete <strong>{deleting() && personName(deleting()!)}</strong>? Their sessions end now and their project roles go with them. The audit trail keeps what they did.
          </>
        }
        typeToConfirm={deleting()?.email}
        confirmLabel="Delete person"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          await api('DELETE', `/api/v1/users/${encodeURIComponent(deleting()!.id)}`, { body: {} });
          await refetch();
        }}
      />
    </section>
  );
}

/** A new password for someone else (typed or generated), then shown once to hand over. */
function ResetPasswordDialog(props: { person: Person | undefined; onClose: () => void }) {
  const [done, setDone] = createSignal<string>();
  const close = () => {
    setDone(undefined);
    props.onClose();
  };
  return (
    <Dialog open={props.person !== undefined} title={done() ? 'Password reset' : 'Reset password'} onClose={close} wide={done() !== undefined}>
      <Show when={done()} fallback={<ResetPasswordForm person={props.person!} onDone={setDone} />}>
        {(password) => (
          <ShownOnce
            warning={`Hand the new password to ${personName(props.person!)} securely.`}
            why="In person or through a password manager, not by email or chat. It is not shown again: only a hash is stored."
            doneLabel="Done"
            onDone={close}
          >
            <Credential label="Email" value={props.person!.email} testId="reset-email" />
            <Credential label="New password" value={password()} testId="reset-password" />
          </ShownOnce>
        )}
      </Show>
    </Dialog>
  );
}

function ResetPasswordForm(props: { person: Person; onDone: (password: string) => void }) {
  const [password, setPassword] = createSignal('');
  const action = createAction();
  const errorId = useId('rerr');
  return (
    <DialogForm
      label="Reset password"
      submitLabel="Reset password"
      action={action}
      errorId={errorId}
      onSubmit={async () => {
        await api('POST', `/api/v1/users/${encodeURIComponent(props.person.id)}/password`, { body: { newPassword: password() } });
        props.onDone(password());
      }}
    >
      <p class="muted-text">
        Every session of <strong>{personName(props.person)}</strong> ends now; they log in again with the new password.
      </p>
      <PasswordField label="New password" value={password()} onValue={setPassword} invalid={action.error()?.startsWith('newPassword') === true} errorId={errorId} />
    </DialogForm>
  );
}

/** A password to hand over: typed or generated, shown on demand. */
function PasswordField(props: { label: string; value: string; onValue: (v: string) => void; invalid: boolean; errorId: string }) {
  const [show, setShow] = createSignal(false);
  const ids = { pw: useId('ppw'), note: useId('pnote') };
  return (
    <div class="field">
      <label for={ids.pw}>{props.label}</label>
      <div class="input-with-actions">
        <input
          id={ids.pw}
          class="mono"
          type={show() ? 'text' : 'password'}
          required
          maxlength="256"
          autocomplete="new-password"
          spellcheck={false}
          value={props.value}
          onInput={(e) => props.onValue(e.currentTarget.value)}
          aria-invalid={props.invalid ? 'true' : undefined}
          aria-describedby={props.invalid ? `${ids.note} ${props.errorId}` : ids.note}
        />
        <IconButton
          icon={show() ? 'eye-off' : 'eye'}
          label={show() ? 'Hide password' : 'Show password'}
          pressed={show()}
          title={show() ? 'Hide password' : 'Show password'}
          onClick={() => setShow((v) => !v)}
        />
        <Button
          size="sm"
          onClick={() => {
            props.onValue(generatePassword());
            setShow(true);
          }}
        >
          <Icon name="key" /> Generate
        </Button>
      </div>
      <p class="hint" id={ids.note}>
        At least 12 characters. Hand it over securely: in person or through a password manager, never in the same message as the email address.
      </p>
    </div>
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
  const action = createAction();
  const ids = { err: useId('perr') };
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
      <PasswordField label="Initial password" value={password()} onValue={setPassword} invalid={errorFor('password')} errorId={ids.err} />
    </DialogForm>
  );
}
