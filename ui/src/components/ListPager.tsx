import { Show } from 'solid-js';
import type { ListView } from './listView';
import { Pager } from './Pager';

/**
 * What follows a list kept in the page (createListView): with `noun`, a line when nothing
 * matches the query; then its Pager.
 */
export function ListPager(props: { list: ListView<unknown>; label: string; noun?: string }) {
  return (
    <>
      <Show when={props.noun && props.list.filtered().length === 0}>
        <p class="muted-text">
          No {props.noun} matches “{props.list.query()}”.
        </p>
      </Show>
      <Pager page={props.list.page()} pageSize={props.list.pageSize} total={props.list.filtered().length} onPage={props.list.setPage} label={props.label} />
    </>
  );
}
