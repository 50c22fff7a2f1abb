/** A spinner with a label, announced as a status. */
export function Loading(props: { label?: string }) {
  return (
    <p class="loading" role="status">
      <span class="spinner" aria-hidden="true" /> {props.label ?? 'Loading…'}
    </p>
  );
}
