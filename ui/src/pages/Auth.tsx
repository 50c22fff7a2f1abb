// First visit (create the superadmin) and login.
import { createSignal, onMount, Show, type JSX } from 'solid-js';
import { api, type User } from '../api';
import { Button, createAction, createNewPassword, ErrorText, Icon, NewPasswordFields, submitWith, TextField, useId, type Action } from '../components';
import { boot, signedIn } from '../session';

interface SessionReply {
  user: User;
  csrfToken: string;
}

/** The card of the signed-out screens: one form, its error and a full-width submit button. */
function AuthForm(props: { title: string; subtitle: string; label: string; submitLabel: string; action: Action; onSubmit: () => Promise<void>; errorId?: string; children: JSX.Element }) {
  let form!: HTMLFormElement;
  // The screen is one form: start in its first field.
  onMount(() => form.querySelector<HTMLElement>('input, select, textarea')?.focus());
  return (
    <main class="auth-page">
      <div class="auth-card">
        <div class="auth-brand">
          <span class="brand-mark" aria-hidden="true">
            <Icon name="shield" />
          </span>
          <span>Vault</span>
        </div>
        <h1>{props.title}</h1>
        <p class="muted-text">{props.subtitle}</p>
        <form ref={form} class="stack" onSubmit={submitWith(props.action, () => props.onSubmit())} aria-label={props.label}>
          {props.children}
          <ErrorText message={props.action.error()} id={props.errorId} />
          <Button type="submit" variant="primary" busy={props.action.busy()} class="btn-block">
            {props.submitLabel}
          </Button>
        </form>
      </div>
    </main>
  );
}

export function SetupPage() {
  const [email, setEmail] = createSignal('');
  const [firstName, setFirstName] = createSignal('');
  const [lastName, setLastName] = createSignal('');
  const password = createNewPassword('The passwords do not match');
  const [setupCode, setSetupCode] = createSignal('');
  const action = createAction();
  // Production mode: the code derived from AUTH_SECRET (`vault-standalone setup-code` prints it), or SETUP_TOKEN.
  const codeRequired = () => {
    const b = boot();
    return b.state === 'setup' && b.setupCodeRequired;
  };

  const submit = async () => {
    const r = await api<SessionReply>('POST', '/api/v1/admin/signup', {
      body: {
        email: email(),
        password: password.checked(),
        firstName: firstName(),
        lastName: lastName() || undefined,
        setupCode: codeRequired() ? setupCode().trim() : undefined,
      },
    });
    signedIn(r.user, r.csrfToken);
  };

  return (
    <AuthForm
      title="Set up this instance"
      subtitle="Create the administrator account. It can manage every project, identity and the audit trail."
      label="Create administrator account"
      submitLabel="Create administrator account"
      action={action}
      onSubmit={submit}
    >
      <Show when={codeRequired()}>
        <TextField
          label="Setup code"
          hint="Print it where the service runs: vault-standalone setup-code (or it is the SETUP_TOKEN the service was given). It proves you run this instance."
          required
          class="mono"
          autocomplete="off"
          spellcheck={false}
          value={setupCode()}
          onValue={setSetupCode}
        />
      </Show>
      <div class="row-2">
        <TextField label="First name" required autocomplete="given-name" value={firstName()} onValue={setFirstName} />
        <TextField label="Last name (optional)" autocomplete="family-name" value={lastName()} onValue={setLastName} />
      </div>
      <TextField label="Email" type="email" required autocomplete="email" value={email()} onValue={setEmail} />
      <NewPasswordFields field={password} label="Password" confirmLabel="Confirm password" />
    </AuthForm>
  );
}

export function LoginPage() {
  const [email, setEmail] = createSignal('');
  const [password, setPassword] = createSignal('');
  const action = createAction();
  const errorId = useId('err');

  const submit = async () => {
    const r = await api<SessionReply>('POST', '/api/v3/auth/login', { body: { email: email(), password: password() }, quiet401: true });
    signedIn(r.user, r.csrfToken);
  };

  return (
    <AuthForm title="Log in" subtitle="Sign in to manage projects, secrets and machine identities." label="Log in" submitLabel="Log in" action={action} onSubmit={submit} errorId={errorId}>
      <TextField label="Email" type="email" required autocomplete="username" value={email()} onValue={setEmail} />
      <TextField
        label="Password"
        type="password"
        required
        autocomplete="current-password"
        value={password()}
        onValue={setPassword}
        invalid={!!action.error()}
        errorId={errorId}
      />
    </AuthForm>
  );
}
