import type { ParentProps } from 'solid-js';

export function Badge(props: ParentProps<{ tone?: 'neutral' | 'good' | 'bad' | 'accent' | 'warn' }>) {
  return <span class={`badge badge-${props.tone ?? 'neutral'}`}>{props.children}</span>;
}
