import type { ParentProps } from 'solid-js';
import { Button } from './Button';
import { Icon } from './Icon';

/**
 * What the service shows only once (a client secret, an initial password): a warning that
 * says so and why, the values (Credential children, with any note), and the one button
 * that closes it for good.
 */
export function ShownOnce(props: ParentProps<{ warning: string; why: string; doneLabel: string; onDone: () => void }>) {
  return (
    <div class="stack">
      <div class="callout callout-warn" role="alert">
        <Icon name="alert" />
        <div>
          <strong>{props.warning}</strong>
          <p>{props.why}</p>
        </div>
      </div>
      {props.children}
      <div class="actions">
        <Button variant="primary" onClick={() => props.onDone()}>
          {props.doneLabel}
        </Button>
      </div>
    </div>
  );
}
