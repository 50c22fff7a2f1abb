// Bulk paste and .env import into one folder: parsed as dotenv parses (ui/src/dotenv.ts),
// each key already in the folder skipped unless the person ticks Overwrite for it; what is
// sent is one batch, all or none (new keys only: a batch create; with overwrites: a batch
// change in upsert mode, which creates the new ones in the same transaction).
import { createMemo, createSignal, For, Show } from 'solid-js';
import { api } from '../api';
import { Badge, DialogForm, Field, useDialog, useId } from '../components';
import { parseDotenv } from '../dotenv';
import { plural } from '../plural';

type Scope = { projectId: string; environment: string; secretPath: string };

/** The most one batch may hold (the API's bound). */
const MAX_BATCH = 1000;

export function BulkImport(props: { scope: Scope; existing: string[]; onSaved: () => void }) {
  const dialog = useDialog();
  const [text, setText] = createSignal('');
  const [overwrite, setOverwrite] = createSignal<Record<string, boolean>>({});
  const [fileNote, setFileNote] = createSignal('');
  const id = useId('bulk');
  const fileId = useId('bulk-file');
  const parsed = createMemo(() => parseDotenv(text()));
  const have = createMemo(() => new Set(props.existing));
  const fresh = () => parsed().entries.filter((e) => !have().has(e.key));
  const clashes = () => parsed().entries.filter((e) => have().has(e.key));
  const replaced = () => clashes().filter((e) => overwrite()[e.key]);

  const readFile = async (file: File | undefined) => {
    if (!file) return;
    if (file.size > 4 * 1024 * 1024) {
      setFileNote(`${file.name} is larger than 4 MB; split it first`);
      return;
    }
    setText(await file.text());
    setFileNote(`Read ${file.name}`);
  };

  const submit = async () => {
    const p = parsed();
    if (p.errors.length > 0) throw new Error('Fix the lines listed above first');
    if (p.entries.length === 0) throw new Error('Paste at least one KEY=value line, or choose a file');
    const items = [...fresh(), ...replaced()];
    if (items.length === 0) throw new Error('Every key is already here: tick Overwrite for the ones to replace');
    if (items.length > MAX_BATCH) throw new Error(`At most ${MAX_BATCH} secrets at a time (${items.length} given)`);
    const secrets = items.map((x) => ({ secretKey: x.key, secretValue: x.value }));
    if (replaced().length === 0) await api('POST', '/api/v4/secrets/batch', { body: { ...props.scope, secrets } });
    else await api('PATCH', '/api/v4/secrets/batch', { body: { ...props.scope, mode: 'upsert', secrets } });
    props.onSaved();
    dialog.close();
  };

  const label = () => {
    const add = fresh().length;
    const over = replaced().length;
    if (over === 0) return add === 0 ? 'Add secrets' : `Add ${plural(add, 'secret')}`;
    return add === 0 ? `Overwrite ${plural(over, 'secret')}` : `Add ${add}, overwrite ${over}`;
  };

  return (
    <DialogForm onSubmit={submit} submitLabel={label()}>
      <Field
        label="KEY=value lines"
        for={id}
        hint={
          <>
            Into <strong>{props.scope.environment}</strong> <span class="mono">{props.scope.secretPath}</span>, read as a .env file: # starts a comment, quotes keep spaces and #,
            double quotes turn \n into a line break and may span lines. All are saved or none.
          </>
        }
      >
        <textarea id={id} class="mono" rows="12" value={text()} onInput={(e) => setText(e.currentTarget.value)} spellcheck={false} autocomplete="off" placeholder={'DATABASE_URL=postgres://…\nAPI_KEY=…'} />
      </Field>
      <Field label="Or import a .env file" for={fileId}>
        <input id={fileId} type="file" accept=".env,text/plain" onChange={(e) => void readFile(e.currentTarget.files?.[0])} />
        <span class="muted-text small" role="status">
          {fileNote()}
        </span>
      </Field>
      <div class="bulk-summary" aria-live="polite">
        <Badge tone={parsed().entries.length ? 'accent' : 'neutral'}>{plural(parsed().entries.length, 'secret')}</Badge>
      </div>
      <Show when={clashes().length > 0}>
        <fieldset class="bulk-clashes">
          <legend>Already here: skipped unless you tick Overwrite</legend>
          <ul class="plain-list">
            <For each={clashes()}>
              {(e) => (
                <li>
                  <label>
                    <input type="checkbox" checked={!!overwrite()[e.key]} onChange={(ev) => setOverwrite((o) => ({ ...o, [e.key]: ev.currentTarget.checked }))} /> Overwrite{' '}
                    <span class="mono">{e.key}</span>
                  </label>
                </li>
              )}
            </For>
          </ul>
        </fieldset>
      </Show>
      <Show when={parsed().errors.length > 0}>
        <div role="alert">
          <ul class="error-list">
            <For each={parsed().errors.slice(0, 8)}>{(m) => <li>{m}</li>}</For>
          </ul>
        </div>
      </Show>
    </DialogForm>
  );
}
