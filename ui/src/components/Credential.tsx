import { CopyButton } from './CopyButton';
import { useId } from './useId';

/** A labelled value to copy (a client id, a secret): the button says "Copy <label>". */
export function Credential(props: { label: string; value: string; testId?: string }) {
  const id = useId('cred');
  const copyLabel = () => `Copy ${props.label.charAt(0).toLowerCase()}${props.label.slice(1)}`;
  return (
    <div class="cred">
      <span class="cred-label" id={id}>
        {props.label}
      </span>
      <div class="cred-value">
        <code data-testid={props.testId} aria-labelledby={id}>
          {props.value}
        </code>
        <CopyButton label={copyLabel()} showText text={() => props.value} />
      </div>
    </div>
  );
}
