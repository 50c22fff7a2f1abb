import { createUniqueId } from 'solid-js';

/** An id to tie a label, hint or message to its control; unique on the page. */
export function useId(prefix: string): string {
  return `${prefix}-${createUniqueId()}`;
}
