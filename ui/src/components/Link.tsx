import type { ParentProps } from 'solid-js';
import { linkClick } from '../router';

/** A link inside the app: a click navigates without reloading the page. */
export function Link(props: ParentProps<{ href: string; class?: string; 'aria-current'?: 'page' | undefined; 'aria-label'?: string; title?: string }>) {
  return (
    <a href={props.href} class={props.class} aria-current={props['aria-current']} aria-label={props['aria-label']} title={props.title} onClick={linkClick}>
      {props.children}
    </a>
  );
}
