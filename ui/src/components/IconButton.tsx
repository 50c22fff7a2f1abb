import { Icon } from './Icon';

/** A button that shows only an icon: `label` is what assistive technology reads, `title` the tooltip. */
export function IconButton(props: { icon: string; label: string; title?: string; danger?: boolean; pressed?: boolean; onClick: () => void }) {
  return (
    <button type="button" class={props.danger ? 'icon-btn danger' : 'icon-btn'} aria-label={props.label} aria-pressed={props.pressed} title={props.title} onClick={() => props.onClick()}>
      <Icon name={props.icon} />
    </button>
  );
}
