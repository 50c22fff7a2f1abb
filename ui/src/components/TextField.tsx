import { splitProps, type JSX } from 'solid-js';
import { Field } from './Field';
import { useId } from './useId';

type InputAttributes = Omit<JSX.InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onInput' | 'aria-invalid'>;

/**
 * A text input in a Field, tied to its label. Any other input attribute (type, required,
 * class, autocomplete…) goes on the input.
 */
export function TextField(
  props: InputAttributes & {
    label: string;
    hint?: JSX.Element;
    /** Shown under the field. */
    error?: string;
    value: string;
    onValue: (value: string) => void;
    /** Marks the input invalid (and, with `errorId`, described by that message). */
    invalid?: boolean;
    errorId?: string;
  },
) {
  const [local, input] = splitProps(props, ['label', 'hint', 'error', 'value', 'onValue', 'invalid', 'errorId']);
  const id = useId('field');
  return (
    <Field label={local.label} for={id} hint={local.hint} error={local.error}>
      <input
        id={id}
        {...input}
        value={local.value}
        onInput={(e) => local.onValue(e.currentTarget.value)}
        aria-invalid={local.invalid ? 'true' : undefined}
        aria-describedby={local.invalid && local.errorId ? local.errorId : input['aria-describedby']}
      />
    </Field>
  );
}
