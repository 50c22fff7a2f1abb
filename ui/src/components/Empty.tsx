import type { ParentProps } from 'solid-js';

/** What an empty list says instead: a title and what to do about it. */
export function Empty(props: ParentProps<{ title: string }>) {
  return (
    <div class="empty">
      <p class="empty-title">{props.title}</p>
      <div class="muted-text">{props.children}</div>
    </div>
  );
}
