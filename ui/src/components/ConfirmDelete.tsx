import type { Confirmation } from '../api';
import type { Escalation } from './confirmation';
import { Confirm, type ConfirmProps } from './Confirm';

/** The confirm button of a delete, at each level of confirmation the API asked for. */
const DELETE_LABEL: Record<Confirmation, (what: string) => string> = {
  plain: (what) => `Delete ${what}`,
  force: (what) => `Delete ${what} and its secrets`,
  overrideImmutable: (what) => `Delete ${what} and its protected keys`,
};

/** Why a delete dialog asks once more. */
const ASK_AGAIN: Record<Escalation, (what: string) => string> = {
  force: (what) => `The ${what} still holds secrets. Confirm again to delete them with it.`,
  overrideImmutable: (what) =>
    `The ${what} holds keys marked as never changing (such as IDP_SECRET_KEY). Confirm again to delete them too; this cannot be undone.`,
};

/**
 * "Delete <what>" for a container (project, environment, folder) that the API refuses to
 * delete until forced (it holds secrets) and then until told to override protected keys:
 * each refusal is explained and the button says what the next confirmation deletes.
 */
export function ConfirmDelete(props: Omit<ConfirmProps, 'title' | 'confirmLabel' | 'askAgain'> & { what: string }) {
  return (
    <Confirm
      {...props}
      title={`Delete ${props.what}`}
      confirmLabel={(level) => DELETE_LABEL[level](props.what)}
      askAgain={(next) => ASK_AGAIN[next](props.what)}
    />
  );
}
