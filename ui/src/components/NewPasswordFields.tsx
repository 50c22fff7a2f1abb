import { createSignal } from 'solid-js';
import { TextField } from './TextField';

/**
 * A new password and its confirmation as a form keeps them (`mismatchText`: what the
 * confirmation says when it differs, and what `checked` refuses with).
 */
export function createNewPassword(mismatchText: string) {
  const [password, setPassword] = createSignal('');
  const [confirm, setConfirm] = createSignal('');
  return {
    password,
    setPassword,
    confirm,
    setConfirm,
    mismatchText,
    /** Shown as soon as something is typed in the confirmation. */
    mismatch: () => confirm() !== '' && confirm() !== password(),
    /** The password to send; refused while the confirmation differs. */
    checked(): string {
      if (password() !== confirm()) throw new Error(mismatchText);
      return password();
    },
    clear() {
      setPassword('');
      setConfirm('');
    },
  };
}
export type NewPassword = ReturnType<typeof createNewPassword>;

/**
 * A new password and its confirmation (registration, change password): at least 12
 * characters, and the confirmation says when it differs.
 */
export function NewPasswordFields(props: {
  field: NewPassword;
  label: string;
  confirmLabel: string;
  /** The API refused the new password (with `errorId`: described by that message). */
  invalid?: boolean;
  errorId?: string;
}) {
  return (
    <>
      <TextField
        label={props.label}
        hint="At least 12 characters."
        type="password"
        required
        minlength="12"
        autocomplete="new-password"
        value={props.field.password()}
        onValue={props.field.setPassword}
        invalid={props.invalid}
        errorId={props.errorId}
      />
      <TextField
        label={props.confirmLabel}
        error={props.field.mismatch() ? props.field.mismatchText : undefined}
        type="password"
        required
        autocomplete="new-password"
        value={props.field.confirm()}
        onValue={props.field.setConfirm}
        invalid={props.field.mismatch()}
      />
    </>
  );
}
