import { Show } from 'solid-js';
import { Button } from './Button';
import { Icon } from './Icon';

/**
 * Previous / Next for a paged list, hidden when it fits on one page. With `total` it also
 * says how many pages; a list paged by the service passes `hasMore` instead.
 */
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
