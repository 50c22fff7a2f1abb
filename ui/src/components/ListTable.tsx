import { Show, splitProps } from 'solid-js';
import { ListPager } from './ListPager';
import type { ListView } from './listView';
import { Table, type TableProps } from './Table';

/**
 * A list kept in the page (createListView) as a Table of its current page, followed by
 * ListPager (`pager` names it; `noun`: the line when nothing matches). `flush`: the table
 * is a panel of its own.
 */
export function ListTable<T>(props: Omit<TableProps<T>, 'each'> & { list: ListView<T>; pager: string; noun?: string; flush?: boolean }) {
  const [local, table] = splitProps(props, ['list', 'pager', 'noun', 'flush']);
  const rows = () => <Table {...table} each={local.list.visible()} />;
  return (
    <>
      <Show when={local.flush} fallback={rows()}>
        <div class="panel flush">{rows()}</div>
      </Show>
      <ListPager list={local.list} label={local.pager} noun={local.noun} />
    </>
  );
}
