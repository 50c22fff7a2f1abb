// First visit (create the superadmin) and login.
import { createSignal, Show } from 'solid-js';
import { api, errorText, type User } from '../api';
import { Button, ErrorText, Field, Icon, useId } from '../components';
import { signedIn } from '../session';

interface SessionReply {
  user: User;
  csrfToken: string;
}

function AuthFrame(props: { title: string; subtitle: string; children: any }) {
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
        {props.children}
      </div>
    </main>
  );
}

export function SetupPage() {
  const [email, setEmail] = createSignal('');
  const [firstName, setFirstName] = createSignal('');
  const [lastName, setLastName] = createSignal('');
  const [password, setPassword] = createSignal('');
  const [confirm, setConfirm] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const ids = { email: useId('email'), first: useId('first'), last: useId('last'), pw: useId('pw'), pw2: useId('pw2') };
  const mismatch = () => confirm() !== '' && confirm() !== password();

  const submit = async (e: Event) => {
    e.preventDefault();
    if (password() !== confirm()) {
      setError('The passwords do not match');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<SessionReply>('POST', '/api/v1/admin/signup', {
        body: { email: email(), password: password(), firstName: firstName(), lastName: lastName() || undefined },
      });
      signedIn(r.user, r.csrfToken);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthFrame title="Set up this instance" subtitle="Create the administrator account. It can manage every project, identity and the audit trail.">
      <form class="stack" onSubmit={submit} aria-label="Create administrator account">
        <div class="row-2">
          <Field label="First name" for={ids.first}>
            <input id={ids.first} required autocomplete="given-name" value={firstName()} onInput={(e) => setFirstName(e.currentTarget.value)} />
          </Field>
          <Field label="Last name (optional)" for={ids.last}>
            <input id={ids.last} autocomplete="family-name" value={lastName()} onInput={(e) => setLastName(e.currentTarget.value)} />
          </Field>
        </div>
        <Field label="Email" for={ids.email}>
          <input id={ids.email} type="email" required autocomplete="email" value={email()} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field label="Password" for={ids.pw} hint="At least 12 characters.">
          <input id={ids.pw} type="password" required minlength="12" autocomplete="new-password" value={password()} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
        <Field label="Confirm password" for={ids.pw2} error={mismatch() ? 'The passwords do not match' : undefined}>
          <input id={ids.pw2} type="password" required autocomplete="new-password" value={confirm()} onInput={(e) => setConfirm(e.currentTarget.value)} aria-invalid={mismatch() ? 'true' : undefined} />
        </Field>
        <ErrorText message={error()} />
        <Button type="submit" variant="primary" busy={busy()} class="btn-block">
          Create administrator account
        </Button>
      </form>
    </AuthFrame>
  );
}

export function LoginPage() {
  const [email, setEmail] = createSignal('');
  const [password, setPassword] = createSignal('');
  const [error, setError] = createSignal<string>();
  const [busy, setBusy] = createSignal(false);
  const ids = { email: useId('email'), pw: useId('pw'), err: useId('err') };

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const r = await api<SessionReply>('POST', '/api/v3/auth/login', { body: { email: email(), password: password() }, quiet401: true });
      signedIn(r.user, r.csrfToken);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <AuthFrame title="Log in" subtitle="Sign in to manage projects, secrets and machine identities.">
      <form class="stack" onSubmit={submit} aria-label="Log in">
        <Field label="Email" for={ids.email}>
          <input id={ids.email} type="email" required autocomplete="username" value={email()} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field label="Password" for={ids.pw}>
          <input
            id={ids.pw}
            type="password"
            required
            autocomplete="current-password"
            value={password()}
            onInput={(e) => setPassword(e.currentTarget.value)}
            aria-invalid={error() ? 'true' : undefined}
            aria-describedby={error() ? ids.err : undefined}
          />
        </Field>
        <Show when={error()}>
          <ErrorText message={error()} id={ids.err} />
        </Show>
        <Button type="submit" variant="primary" busy={busy()} class="btn-block">
          Log in
        </Button>
      </form>
    </AuthFrame>
  );
}
