import { For, Show, type Accessor, type JSX } from 'solid-js';

export type Column = string | { label: string; class?: string };

/**
 * A table of rows: a header cell per column (`actions` adds the last one, for row buttons,
 * named for screen readers only) and a row per item, as `children` renders it.
 */
export interface TableProps<T> {
  columns: Column[];
  actions?: boolean;
  each: readonly T[];
  children: (item: T, index: Accessor<number>) => JSX.Element;
  label?: string;
  class?: string;
}

export function Table<T>(props: TableProps<T>) {
  return (
    <table class={props.class ? `table ${props.class}` : 'table'} aria-label={props.label}>
      <thead>
        <tr>
          <For each={props.columns}>{(c) => (typeof c === 'string' ? <th scope="col">{c}</th> : <th scope="col" class={c.class}>{c.label}</th>)}</For>
          <Show when={props.actions}>
            <th scope="col" class="col-actions">
              <span class="sr-only">Actions</span>
            </th>
          </Show>
        </tr>
      </thead>
      <tbody>
        <For each={props.each}>{props.children}</For>
      </tbody>
    </table>
  );
}
