import { Show } from 'solid-js';
import { Icon } from './Icon';

/** A message next to what caused it; announced by screen readers. */
export function ErrorText(props: { message: string | undefined; id?: string }) {
  return (
    <Show when={props.message}>
      <p class="error" role="alert" id={props.id}>
        <Icon name="alert" /> {props.message}
      </p>
    </Show>
  );
}
