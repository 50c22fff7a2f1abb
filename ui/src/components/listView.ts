import { batch, createMemo, createSignal, type Accessor } from 'solid-js';

export interface ListView<T> {
  /** What is typed in the list's SearchBox. */
  query: Accessor<string>;
  /** A new query starts again at the first page. */
  setQuery: (query: string) => void;
  page: Accessor<number>;
  setPage: (page: number) => void;
  pageSize: number;
  /** Every item that matches the query, in order. */
  filtered: Accessor<T[]>;
  /** The current page of them. */
  visible: Accessor<T[]>;
}

/** A list kept in the page: sorted, filtered by a typed query, shown a page at a time. */
export function createListView<T>(opts: {
  items: () => readonly T[] | undefined;
  pageSize: number;
  order?: (a: T, b: T) => number;
  /** Whether an item matches the query (trimmed, lower case; never empty). */
  matches?: (item: T, query: string) => boolean;
}): ListView<T> {
  const [query, setQueryValue] = createSignal('');
  const [page, setPage] = createSignal(0);
  const filtered = createMemo(() => {
    const q = query().trim().toLowerCase();
    const list = [...(opts.items() ?? [])];
    if (opts.order) list.sort(opts.order);
    const matches = opts.matches;
    return q && matches ? list.filter((item) => matches(item, q)) : list;
  });
  return {
    query,
    setQuery: (q) =>
      batch(() => {
        setQueryValue(q);
        setPage(0);
      }),
    page,
    setPage,
    pageSize: opts.pageSize,
    filtered,
    visible: () => filtered().slice(page() * opts.pageSize, page() * opts.pageSize + opts.pageSize),
  };
}
