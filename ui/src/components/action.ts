import { createSignal, type Accessor } from 'solid-js';
import { errorText } from '../api';

/** What a form or a button does: busy while it runs, and what went wrong, as text for the reader. */
export interface Action {
  busy: Accessor<boolean>;
  /** What the running task is about (the `what` it was run with), for a list of buttons that share the action. */
  running: Accessor<unknown>;
  error: Accessor<string | undefined>;
  setError: (message: string | undefined) => void;
  /** Runs `task`: busy meanwhile, the last error cleared first and set from whatever it throws. */
  run: (task: () => Promise<void>, what?: unknown) => Promise<void>;
}

export function createAction(): Action {
  const [running, setRunning] = createSignal<{ what: unknown }>();
  const [error, setError] = createSignal<string>();
  const run = async (task: () => Promise<void>, what?: unknown) => {
    setRunning({ what });
    setError(undefined);
    try {
      await task();
    } catch (err) {
      setError(errorText(err));
    } finally {
      setRunning(undefined);
    }
  };
  return { busy: () => running() !== undefined, running: () => running()?.what, error, setError, run };
}

/** A form's submit handler that runs `task` as `action`. */
export function submitWith(action: Action, task: () => Promise<void>): (e: Event) => void {
  return (e) => {
    e.preventDefault();
    void action.run(task);
  };
}
