import { Show, type JSX, type ParentProps } from 'solid-js';
import { ErrorText } from './ErrorText';

/** A labelled control with an optional hint and error under it (TextField for a plain text input). */
export function Field(props: ParentProps<{ label: string; hint?: JSX.Element; error?: string; class?: string; for?: string }>) {
  return (
    <div class={`field ${props.class ?? ''}`}>
      <label for={props.for}>{props.label}</label>
      {props.children}
      <Show when={props.hint}>
        <p class="hint">{props.hint}</p>
      </Show>
      <ErrorText message={props.error} />
    </div>
  );
}
