import type { JSX, ParentProps } from 'solid-js';
import { createAction, submitWith, type Action } from './action';
import { Button } from './Button';
import { useDialog } from './Dialog';
import { ErrorText } from './ErrorText';

/**
 * The form inside a Dialog: its fields, the error of the last submit, Cancel (closes the
 * dialog) and the submit button, busy while `onSubmit` runs. A form whose fields show
 * the error too passes its own `action` (and `errorId` to tie them to the message).
 */
export function DialogForm(
  props: ParentProps<{
    onSubmit: () => Promise<void>;
    submitLabel: JSX.Element;
    submitVariant?: 'primary' | 'danger';
    submitDisabled?: boolean;
    action?: Action;
    errorId?: string;
    label?: string;
  }>,
) {
  const action = props.action ?? createAction();
  const dialog = useDialog();
  return (
    <form class="stack" onSubmit={submitWith(action, () => props.onSubmit())} aria-label={props.label}>
      {props.children}
      <ErrorText message={action.error()} id={props.errorId} />
      <div class="actions">
        <Button onClick={() => dialog.close()}>Cancel</Button>
        <Button type="submit" variant={props.submitVariant ?? 'primary'} busy={action.busy()} disabled={props.submitDisabled}>
          {props.submitLabel}
        </Button>
      </div>
    </form>
  );
}
