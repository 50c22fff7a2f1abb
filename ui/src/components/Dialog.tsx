import { createContext, createEffect, onCleanup, Show, useContext, type ParentProps } from 'solid-js';
import { Icon } from './Icon';
import { useId } from './useId';

const DialogContext = createContext<{ close: () => void }>();

/** The dialog a form is in, for its Cancel button and for closing it when done. */
export function useDialog(): { close: () => void } {
  const dialog = useContext(DialogContext);
  if (!dialog) throw new Error('useDialog outside a Dialog');
  return dialog;
}

/** Controls a dialog may start on: its first field, else its first button (Cancel before the action). */
const FIELD = 'input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled])';
const FOCUSABLE = `${FIELD}, button:not([disabled]), a[href], [tabindex]:not([tabindex="-1"])`;

/**
 * Moves focus into the dialog's body: the browser puts it on the first focusable element,
 * the ✕, so typing a name and pressing Enter would close the dialog with nothing saved.
 */
function focusFirstField(dialog: HTMLDialogElement): void {
  const body = dialog.querySelector('.dialog-body');
  const target = body?.querySelector<HTMLElement>(FIELD) ?? body?.querySelector<HTMLElement>(FOCUSABLE);
  target?.focus();
}

/**
 * A modal on the native <dialog>: focus trap, Escape and inert background for free. Its
 * content exists only while it is open, so a form inside starts afresh at every opening.
 */
export function Dialog(props: ParentProps<{ open: boolean; title: string; onClose: () => void; wide?: boolean }>) {
  let ref!: HTMLDialogElement;
  const titleId = useId('dlg');
  createEffect(() => {
    if (props.open && !ref.open) {
      ref.showModal();
      focusFirstField(ref);
    } else if (!props.open && ref.open) ref.close();
  });
  onCleanup(() => ref?.open && ref.close());
  return (
    <dialog
      ref={ref}
      class={`dialog ${props.wide ? 'dialog-wide' : ''}`}
      aria-labelledby={titleId}
      onClose={() => props.open && props.onClose()}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <Show when={props.open}>
        <header class="dialog-head">
          <h2 id={titleId}>{props.title}</h2>
          <button type="button" class="icon-btn" aria-label="Close dialog" onClick={() => props.onClose()}>
            <Icon name="x" />
          </button>
        </header>
        <div class="dialog-body">
          <DialogContext.Provider value={{ close: () => props.onClose() }}>{props.children}</DialogContext.Provider>
        </div>
      </Show>
    </dialog>
  );
}
