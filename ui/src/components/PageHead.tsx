import { Show, type JSX, type ParentProps } from 'solid-js';
import { Button } from './Button';
import { Icon } from './Icon';

/**
 * The top of a page: its title with what it is for (children), and its main action:
 * `action`, or a "New …" button (`newLabel`, `onNew`) for a list page.
 */
export function PageHead(props: ParentProps<{ title: JSX.Element; action?: JSX.Element; newLabel?: string; onNew?: () => void }>) {
  return (
    <div class="page-head">
      <div>
        <h1>{props.title}</h1>
        {props.children}
      </div>
      <Show when={props.newLabel} fallback={props.action}>
        <Button variant="primary" onClick={() => props.onNew?.()}>
          <Icon name="plus" /> {props.newLabel}
        </Button>
      </Show>
    </div>
  );
}
