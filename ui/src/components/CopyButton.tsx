import { createSignal, onCleanup, Show } from 'solid-js';
import { Icon } from './Icon';

/** Copies text (which may first be fetched); says so for a moment (and to screen readers). */
export function CopyButton(props: { text: () => string | Promise<string>; label: string; showText?: boolean }) {
  const [state, setState] = createSignal<'idle' | 'copied' | 'failed'>('idle');
  let timer: number | undefined;
  onCleanup(() => clearTimeout(timer));
  const copy = async () => {
    try {
      const value = await props.text();
      await navigator.clipboard.writeText(value);
      setState('copied');
    } catch {
      setState('failed');
    }
    clearTimeout(timer);
    timer = window.setTimeout(() => setState('idle'), 1800);
  };
  return (
    <button type="button" class={`icon-btn ${props.showText ? 'with-text' : ''}`} aria-label={props.label} title={props.label} onClick={copy}>
      <Icon name={state() === 'copied' ? 'check' : 'copy'} />
      <Show when={props.showText}>
        <span>{state() === 'copied' ? 'Copied' : 'Copy'}</span>
      </Show>
      <span class="sr-only" role="status">
        {state() === 'copied' ? 'Copied to clipboard' : state() === 'failed' ? 'Copy failed' : ''}
      </span>
    </button>
  );
}
