import { createSignal, Show, type JSX } from 'solid-js';
import type { Confirmation } from '../api';
import { createConfirmation, type Escalation } from './confirmation';
import { Dialog, useDialog } from './Dialog';
import { DialogForm } from './DialogForm';
import { TextField } from './TextField';

export interface ConfirmProps {
  open: boolean;
  title: string;
  message: JSX.Element;
  /** The button, at each level of confirmation. */
  confirmLabel: string | ((level: Confirmation) => string);
  /** Does the change at the level confirmed so far; the dialog closes when it succeeds. */
  onConfirm: (level: Confirmation) => Promise<void>;
  onClose: () => void;
  /** Why the dialog asks once more when the API refused and names a flag (see createConfirmation). */
  askAgain?: (next: Escalation) => string | undefined;
  /** The button's look: danger (the default) for what cannot be undone. */
  variant?: 'primary' | 'danger';
  /** When set, the user must type this text to enable the button. */
  typeToConfirm?: string;
}

/** Asks before a change that cannot be undone; with `askAgain`, asks again while the API wants more. */
export function Confirm(props: ConfirmProps) {
  return (
    <Dialog open={props.open} title={props.title} onClose={props.onClose}>
      <ConfirmForm {...props} />
    </Dialog>
  );
}

function ConfirmForm(props: ConfirmProps) {
  const [typed, setTyped] = createSignal('');
  const confirmation = createConfirmation((next) => props.askAgain?.(next));
  const dialog = useDialog();
  const label = () => (typeof props.confirmLabel === 'string' ? props.confirmLabel : props.confirmLabel(confirmation.level()));
  return (
    <DialogForm
      onSubmit={async () => {
        await confirmation.attempt((level) => props.onConfirm(level));
        dialog.close();
      }}
      submitLabel={label()}
      submitVariant={props.variant ?? 'danger'}
      submitDisabled={props.typeToConfirm !== undefined && typed() !== props.typeToConfirm}
    >
      <div class="muted-text">{props.message}</div>
      <Show when={props.typeToConfirm}>
        <TextField label={`Type "${props.typeToConfirm}" to confirm`} value={typed()} onValue={setTyped} autocomplete="off" />
      </Show>
    </DialogForm>
  );
}
