// Shared building blocks: links, buttons, fields, alerts, dialogs, pager, copy.
import { createEffect, createSignal, createUniqueId, onCleanup, Show, splitProps, type JSX, type ParentProps } from 'solid-js';
import { linkClick } from './router';
import type { Confirmation } from './api';

export function Link(props: ParentProps<{ href: string; class?: string; 'aria-current'?: 'page' | undefined; title?: string }>) {
  return (
    <a href={props.href} class={props.class} aria-current={props['aria-current']} title={props.title} onClick={linkClick}>
      {props.children}
    </a>
  );
}

type ButtonProps = JSX.ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'secondary' | 'danger' | 'ghost'; size?: 'sm' | 'md'; busy?: boolean };

export function Button(props: ButtonProps) {
  const [local, rest] = splitProps(props, ['variant', 'size', 'busy', 'class', 'children', 'type', 'disabled']);
  return (
    <button
      type={local.type ?? 'button'}
      class={`btn btn-${local.variant ?? 'secondary'} ${local.size === 'sm' ? 'btn-sm' : ''} ${local.class ?? ''}`}
      disabled={local.disabled || local.busy}
      aria-busy={local.busy ? 'true' : undefined}
      {...rest}
    >
      {local.children}
    </button>
  );
}

/** A message next to what caused it; announced by screen readers. */
export function ErrorText(props: { message: string | undefined; id?: string }) {
  return (
    <Show when={props.message}>
      <p class="error" role="alert" id={props.id}>
        <Icon name="alert" /> {props.message}
      </p>
    </Show>
  );
}

export function Field(
  props: ParentProps<{ label: string; hint?: JSX.Element; error?: string; class?: string; for?: string }>,
) {
  return (
    <div class={`field ${props.class ?? ''}`}>
      <label for={props.for}>{props.label}</label>
      {props.children}
      <Show when={props.hint}>
        <p class="hint">{props.hint}</p>
      </Show>
      <ErrorText message={props.error} />
    </div>
  );
}

export function useId(prefix: string): string {
  return `${prefix}-${createUniqueId()}`;
}

/** A modal on the native <dialog>: focus trap, Escape and inert background for free. */
export function Dialog(props: ParentProps<{ open: boolean; title: string; onClose: () => void; wide?: boolean }>) {
  let ref!: HTMLDialogElement;
  const titleId = useId('dlg');
  createEffect(() => {
    if (props.open && !ref.open) ref.showModal();
    else if (!props.open && ref.open) ref.close();
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
        <div class="dialog-body">{props.children}</div>
      </Show>
    </dialog>
  );
}

/** A search field with a visually hidden label (screen readers name it by `label`). */
export function SearchBox(props: { label: string; placeholder: string; value: string; onInput: (value: string) => void }) {
  const id = useId('search');
  return (
    <div class="search">
      <label for={id} class="sr-only">
        {props.label}
      </label>
      <Icon name="search" />
      <input id={id} type="search" placeholder={props.placeholder} value={props.value} onInput={(e) => props.onInput(e.currentTarget.value)} />
    </div>
  );
}

/** The confirm button of a delete, at each level of confirmation the API asked for. */
export const DELETE_LABEL: Record<Confirmation, (what: string) => string> = {
  plain: (what) => `Delete ${what}`,
  force: (what) => `Delete ${what} and its secrets`,
  overrideImmutable: (what) => `Delete ${what} and its protected keys`,
};

/** Why a delete dialog asks once more. */
export const ASK_AGAIN: Record<Exclude<Confirmation, 'plain'>, (what: string) => string> = {
  force: (what) => `The ${what} still holds secrets. Confirm again to delete them with it.`,
  overrideImmutable: (what) =>
    `The ${what} holds keys marked as never changing (such as IDP_SECRET_KEY). Confirm again to delete them too; this cannot be undone.`,
};

export function Confirm(props: {
  open: boolean;
  title: string;
  message: JSX.Element;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  /** When set, the user must type this text to enable the button. */
  typeToConfirm?: string;
}) {
  const [busy, setBusy] = createSignal(false);
  const [error, setError] = createSignal<string>();
  const [typed, setTyped] = createSignal('');
  const inputId = useId('confirm');
  createEffect(() => {
    if (props.open) {
      setError(undefined);
      setTyped('');
    }
  });
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await props.onConfirm();
      props.onClose();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog open={props.open} title={props.title} onClose={props.onClose}>
      <form onSubmit={run} class="stack">
        <div class="muted-text">{props.message}</div>
        <Show when={props.typeToConfirm}>
          <Field label={`Type "${props.typeToConfirm}" to confirm`} for={inputId}>
            <input id={inputId} value={typed()} onInput={(e) => setTyped(e.currentTarget.value)} autocomplete="off" />
          </Field>
        </Show>
        <ErrorText message={error()} />
        <div class="actions">
          <Button onClick={() => props.onClose()}>Cancel</Button>
          <Button type="submit" variant="danger" busy={busy()} disabled={props.typeToConfirm !== undefined && typed() !== props.typeToConfirm}>
            {props.confirmLabel}
          </Button>
        </div>
      </form>
    </Dialog>
  );
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : 'Something went wrong';
}

/** Copies text; says so for a moment (and to screen readers). */
export function CopyButton(props: { text: () => string | Promise<string>; label: string; showText?: boolean }) {
  const [state, setState] = createSignal<'idle' | 'copied' | 'failed'>('idle');
  let timer: number | undefined;
  onCleanup(() => clearTimeout(timer));
  const copy = async () => {
    try {
      const value = await props.text();
      await navigator.clipboard.writeText(value);
      setState('copied');
    } catch {
      setState('failed');
    }
    clearTimeout(timer);
    timer = window.setTimeout(() => setState('idle'), 1800);
  };
  return (
    <button type="button" class={`icon-btn ${props.showText ? 'with-text' : ''}`} aria-label={props.label} title={props.label} onClick={copy}>
      <Icon name={state() === 'copied' ? 'check' : 'copy'} />
      <Show when={props.showText}>
        <span>{state() === 'copied' ? 'Copied' : 'Copy'}</span>
      </Show>
      <span class="sr-only" role="status">
        {state() === 'copied' ? 'Copied to clipboard' : state() === 'failed' ? 'Copy failed' : ''}
      </span>
    </button>
  );
}

export function Pager(props: { page: number; pageSize: number; total?: number; hasMore?: boolean; onPage: (page: number) => void; label: string }) {
  const pages = () => (props.total === undefined ? undefined : Math.max(1, Math.ceil(props.total / props.pageSize)));
  const hasNext = () => (props.total === undefined ? !!props.hasMore : props.page + 1 < pages()!);
  return (
    <Show when={props.page > 0 || hasNext()}>
      <nav class="pager" aria-label={props.label}>
        <Button size="sm" disabled={props.page === 0} onClick={() => props.onPage(props.page - 1)}>
          <Icon name="chevron-left" /> Previous
        </Button>
        <span class="pager-status" aria-live="polite">
          Page {props.page + 1}
          <Show when={pages()}> of {pages()}</Show>
        </span>
        <Button size="sm" disabled={!hasNext()} onClick={() => props.onPage(props.page + 1)}>
          Next <Icon name="chevron-right" />
        </Button>
      </nav>
    </Show>
  );
}

export function Empty(props: ParentProps<{ title: string }>) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      <div class="muted-text">{props.children}</div>
    </div>
  );
}

export function Loading(props: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" /> {props.label ?? 'Loading…'}
    </p>
  );
}

export function Badge(props: ParentProps<{ tone?: 'neutral' | 'good' | 'bad' | 'accent' | 'warn' }>) {
  return <span class={`badge badge-${props.tone ?? 'neutral'}`}>{props.children}</span>;
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

const ICONS: Record<string, string> = {
  alert: 'M12 9v4m0 4h.01M10.3 3.9L1.8 18a2 2 0 001.7 3h17a2 2 0 001.7-3L13.7 3.9a2 2 0 00-3.4 0z',
  x: 'M18 6L6 18M6 6l12 12',
  copy: 'M8 8h11v12H8zM5 16H4V4h12v1',
  check: 'M20 6L9 17l-5-5',
  eye: 'M1 12s4-7 11-7 11 7 11 7-4 7-11 7S1 12 1 12zm11 3a3 3 0 100-6 3 3 0 000 6z',
  'eye-off': 'M3 3l18 18M10.6 10.6a2 2 0 002.8 2.8M9.9 5.1A10 10 0 0112 5c7 0 11 7 11 7a17 17 0 01-3.2 3.9M6.6 6.6C3.1 8.6 1 12 1 12s4 7 11 7a10 10 0 005.4-1.6',
  edit: 'M4 20h4L19 9l-4-4L4 16zM14 6l4 4',
  trash: 'M4 7h16M10 11v6m4-6v6M6 7l1 13h10l1-13M9 7V4h6v3',
  history: 'M3 12a9 9 0 109-9 9 9 0 00-6.4 2.6L3 8m0-5v5h5m4-1v5l3 3',
  folder: 'M3 6a2 2 0 012-2h4l2 2h8a2 2 0 012 2v10a2 2 0 01-2 2H5a2 2 0 01-2-2z',
  plus: 'M12 5v14M5 12h14',
  key: 'M15 7a4 4 0 11-3.9 4.9L4 19v2h3v-2h2v-2h2l1.1-1.1A4 4 0 0115 7z',
  download: 'M12 3v12m0 0l-4-4m4 4l4-4M4 17v3h16v-3',
  'chevron-left': 'M15 18l-6-6 6-6',
  'chevron-right': 'M9 6l6 6-6 6',
  shield: 'M12 3l8 3v6c0 5-3.5 8.5-8 9.5C7.5 20.5 4 17 4 12V6z',
  users: 'M16 19v-1a4 4 0 00-4-4H6a4 4 0 00-4 4v1M9 10a3 3 0 100-6 3 3 0 000 6zm13 9v-1a4 4 0 00-3-3.9M16 4.1a3 3 0 010 5.8',
  robot: 'M12 3v3M6 8h12a2 2 0 012 2v8a2 2 0 01-2 2H6a2 2 0 01-2-2v-8a2 2 0 012-2zm3 5h.01M15 13h.01M9 17h6',
  list: 'M8 6h13M8 12h13M8 18h13M3 6h.01M3 12h.01M3 18h.01',
  settings: 'M12 15a3 3 0 100-6 3 3 0 000 6zm7.4-3a7.4 7.4 0 00-.1-1.3l2-1.6-2-3.4-2.4 1a7.5 7.5 0 00-2.2-1.3L14.3 2h-4l-.4 2.6a7.5 7.5 0 00-2.2 1.3l-2.4-1-2 3.4 2 1.6a7.4 7.4 0 000 2.6l-2 1.6 2 3.4 2.4-1a7.5 7.5 0 002.2 1.3l.4 2.6h4l.4-2.6a7.5 7.5 0 002.2-1.3l2.4 1 2-3.4-2-1.6c.1-.4.1-.9.1-1.3z',
  logout: 'M9 21H5a2 2 0 01-2-2V5a2 2 0 012-2h4m7 14l5-5-5-5m5 5H9',
  search: 'M11 19a8 8 0 100-16 8 8 0 000 16zm10 2l-4.3-4.3',
  upload: 'M12 21V9m0 0l-4 4m4-4l4 4M4 7V4h16v3',
  lock: 'M6 11h12v10H6zM8 11V7a4 4 0 018 0v4',
};

export function Icon(props: { name: keyof typeof ICONS | string }) {
  return (
    <svg class="icon" viewBox="0 0 24 24" aria-hidden="true">
      <path d={ICONS[props.name] ?? ''} />
    </svg>
  );
}
