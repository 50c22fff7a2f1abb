import { TextField } from './TextField';

/**
 * A new password and its confirmation (registration, change password): at least 12
 * characters, and the confirmation says when it differs.
 */
export function NewPasswordFields(props: {
  label: string;
  confirmLabel: string;
  /** What the confirmation says when it differs. */
  mismatchText: string;
  password: string;
  onPassword: (value: string) => void;
  confirm: string;
  onConfirm: (value: string) => void;
  mismatch: boolean;
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
        value={props.password}
        onValue={props.onPassword}
        invalid={props.invalid}
        errorId={props.errorId}
      />
      <TextField
        label={props.confirmLabel}
        error={props.mismatch ? props.mismatchText : undefined}
        type="password"
        required
        autocomplete="new-password"
        value={props.confirm}
        onValue={props.onConfirm}
        invalid={props.mismatch}
      />
    </>
  );
}
