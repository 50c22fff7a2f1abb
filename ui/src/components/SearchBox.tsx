import { Icon } from './Icon';
import { useId } from './useId';

/** A search field with a visually hidden label (screen readers name it by `label`). */
export function SearchBox(props: { label: string; placeholder: string; value: string; onInput: (value: string) => void }) {
  const id = useId('search');
  return (
    <div class="search">
      <label for={id} class="sr-only">
        {props.label}
      </label>
      <Icon name="search" />
      <input id={id} type="search" placeholder={props.placeholder} value={props.value} onInput={(e) => props.onInput(e.currentTarget.value)} />
    </div>
  );
}
