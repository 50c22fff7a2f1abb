import { createSignal } from 'solid-js';
import { nextConfirmation, type Confirmation } from '../api';

export type Escalation = Exclude<Confirmation, 'plain'>;

/**
 * How far one change has been confirmed. It starts plain; when the API refuses it with a
 * 409 naming the flag a repeat needs (`details.requires`), `attempt` steps up to that level
 * and throws `askAgain(next)` for the dialog to show, so the next confirmation sends it.
 * Where `askAgain` gives nothing for that level, the refusal itself is thrown.
 */
export function createConfirmation(askAgain: (next: Escalation) => string | undefined) {
  const [level, setLevel] = createSignal<Confirmation>('plain');
  const attempt = async (send: (level: Confirmation) => Promise<void>) => {
    const current = level();
    try {
      await send(current);
    } catch (err) {
      const next = nextConfirmation(err, current);
      const why = next && askAgain(next);
      if (!next || !why) throw err;
      setLevel(next);
      throw new Error(why);
    }
  };
  return { level, attempt };
}
