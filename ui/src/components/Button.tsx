import { splitProps, type JSX } from 'solid-js';

export type ButtonProps = JSX.ButtonHTMLAttributes<HTMLButtonElement> & { variant?: 'primary' | 'secondary' | 'danger' | 'ghost'; size?: 'sm' | 'md'; busy?: boolean };

/** A button (type "button" unless told otherwise); `busy` disables it and says so to screen readers. */
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
