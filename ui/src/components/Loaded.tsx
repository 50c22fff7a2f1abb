import { Match, Show, Switch, type Accessor, type JSX, type Resource } from 'solid-js';
import { errorText } from '../api';
import { ErrorText } from './ErrorText';
import { Loading } from './Loading';

/** A resource's value, or undefined while it has failed (reading a failed resource throws). */
export function valueOf<T>(resource: Resource<T>): T | undefined {
  return resource.state === 'errored' ? undefined : resource();
}

/**
 * What a resource holds: a spinner until it first loads, its error if it failed, else
 * `children` with the value (kept on screen while it reloads); nothing while it has
 * nothing to load. For a list, `empty` is shown instead when it has nothing in it.
 */
export function Loaded<T>(props: { of: Resource<T>; empty?: JSX.Element; children: (value: Accessor<T>) => JSX.Element }) {
  const failed = () => props.of.state === 'errored';
  const value = () => valueOf(props.of) as T;
  const isEmpty = () => props.empty !== undefined && Array.isArray(value()) && (value() as unknown[]).length === 0;
  return (
    <>
      <ErrorText message={failed() ? errorText(props.of.error) : undefined} />
      <Switch>
        <Match when={failed()}>{null}</Match>
        <Match when={value() !== undefined}>
          <Show when={!isEmpty()} fallback={props.empty}>
            {/* A function child: Show calls it untracked, so what `children` reads does not rebuild the branch. */}
            {(_shown) => props.children(value)}
          </Show>
        </Match>
        <Match when={props.of.loading}>
          <Loading />
        </Match>
      </Switch>
    </>
  );
}
