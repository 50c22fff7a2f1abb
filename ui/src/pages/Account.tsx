// My account: who I am, and changing my password (the current one is required). The
// service ends every session of mine, on every replica, and answers with a new one for
// this browser: other browsers and API clients with my old sessions must log in again.
import { createSignal, Show } from 'solid-js';
import { api, personName, type User } from '../api';
import { Badge, createAction, createNewPassword, ErrorText, Button, Icon, NewPasswordFields, PageHead, submitWith, TextField, useId } from '../components';
import { signedIn, user } from '../session';

interface SessionReply {
  user: User;
  csrfToken: string;
}

export function AccountPage() {
  const [oldPassword, setOldPassword] = createSignal('');
  const newPassword = createNewPassword('The new passwords do not match');
  const [changed, setChanged] = createSignal(false);
  const action = createAction();
  const errorId = useId('acct-err');
  /** Which field an API message is about ("oldPassword is not your current password"). */
  const about = (field: 'oldPassword' | 'newPassword') => action.error()?.startsWith(field) === true;

  const submit = async () => {
    setChanged(false);
    const r = await api<SessionReply>('POST', '/api/v1/users/me/password', { body: { oldPassword: oldPassword(), newPassword: newPassword.checked() } });
    signedIn(r.user, r.csrfToken);
    setOldPassword('');
    newPassword.clear();
    setChanged(true);
  };

  return (
    <section class="page">
      <PageHead title="My account">
        <p class="muted-text">
          {personName(user() ?? { firstName: '', lastName: '', email: '' })} · {user()?.email}{' '}
          <Show when={user()?.superAdmin}>
            <Badge tone="accent">
              <Icon name="shield" /> administrator
            </Badge>
          </Show>
        </p>
      </PageHead>
      <div class="panel narrow">
        <h2>Change password</h2>
        <p class="muted-text small">Every session of yours ends, in every browser and on every server: only this page stays signed in.</p>
        <form class="stack" aria-label="Change password" onSubmit={submitWith(action, submit)}>
          <TextField
            label="Current password"
            type="password"
            required
            autocomplete="current-password"
            value={oldPassword()}
            onValue={setOldPassword}
            invalid={about('oldPassword')}
            errorId={errorId}
          />
          <NewPasswordFields field={newPassword} label="New password" confirmLabel="Confirm new password" invalid={about('newPassword')} errorId={errorId} />
          <ErrorText message={readable(action.error())} id={errorId} />
          <Show when={changed()}>
            <p class="ok-text" role="status">
              <Icon name="check" /> Password changed. Your other sessions have ended.
            </p>
          </Show>
          <div class="actions">
            <Button type="submit" variant="primary" busy={action.busy()}>
              Change password
            </Button>
          </div>
        </form>
      </div>
    </section>
  );
}

/** The API names its fields ("oldPassword is not your current password"); the reader sees the labels. */
function readable(message: string | undefined): string | undefined {
  return message?.replace(/^oldPassword is not your current password$/, 'The current password is wrong').replace(/^oldPassword\b/, 'The current password').replace(/^newPassword\b/, 'The new password');
}
