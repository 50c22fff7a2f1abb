// Sealed secret values and comments: the one place they are opened and sealed.
// Every read that decrypts (lists, single reads, history, restore, export, references)
// goes through openSealed, so a blob that does not open is answered the same way
// everywhere: a 500 DecryptionFailed that names the row, never a value or a guess.
import { Readable } from 'node:stream';
import type { Crypto, PackedItems, Segments } from '../../crypto/index.js';
import type { TxStores } from '../../storage/index.js';
import type { ProjectRecord } from '../../storage/projects.js';
import { AppError } from '../errors.js';
import { dataKeyAad } from './keyring.js';

/** Where a sealed value lives: a blob moved to another row, key or version will not open. */
export interface SealedAt {
  projectId: string;
  environmentId: string;
  folderId: string;
  secretId: string;
  key: string;
  version: number;
}

/** What binds a sealed value (or comment) to its row. */
export function secretAad(part: 'value' | 'comment', p: SealedAt): string {
  return aadOfFolder(p) + aadInFolder(part, p);
}
// The two halves of secretAad: packedItems writes the first once per folder.
const aadOfFolder = (p: Pick<SealedAt, 'projectId' | 'environmentId' | 'folderId'>) =>
  `vault-standalone:secret:v1:${p.projectId}:${p.environmentId}:${p.folderId}:`;
const aadInFolder = (part: 'value' | 'comment', p: Pick<SealedAt, 'secretId' | 'key' | 'version'>) => `${p.secretId}:${p.key}:${p.version}:${part}`;

/** One blob to open, and the row it belongs to (named when it does not open). */
export interface SealedItem {
  blob: Buffer;
  aad: string;
  owner: string;
  /** The data key the blob is sealed under (its row's), and its wrapped bytes. */
  dataKeyId: string;
  wrappedKey: Buffer;
}

/** A row holding a sealed value and maybe a comment: a secret, or one version of it. */
export interface SealedRow {
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
  dataKeyId: string;
  wrappedKey: Buffer;
}

/** How a row is named in a DecryptionFailed message. */
export const currentRow = (secretId: string) => `secret ${secretId}`;
export const versionRow = (secretId: string, version: number) => `secret ${secretId} version ${version}`;

/**
 * The blobs of `rows` in order: for each row its value (unless `withValues` is false),
 * then its comment when it has one. `idOf` names the secret a row belongs to.
 */
export function sealedItems<R extends SealedRow>(
  projectId: string,
  environmentId: string,
  rows: readonly R[],
  idOf: (r: R) => string,
  ownerOf: (r: R) => string,
  withValues = true,
): SealedItem[] {
  const items: SealedItem[] = [];
  for (const r of rows) {
    const at = { projectId, environmentId, folderId: r.folderId, secretId: idOf(r), key: r.key, version: r.version };
    const key = { owner: ownerOf(r), dataKeyId: r.dataKeyId, wrappedKey: r.wrappedKey };
    if (withValues) items.push({ blob: r.valueBlob, aad: secretAad('value', at), ...key });
    if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', at), ...key });
  }
  return items;
}

/**
 * sealedItems(rows) for a render, packed (Crypto.render's PackedItems): the blobs and the
 * UTF-8 bytes of their AADs written straight into two buffers, each folder's part of the
 * AAD encoded once. A 10,000-secret folder's render spent 4-9 ms of the main thread
 * joining 10,000 AAD strings before its task could leave. Every row must be under the
 * same data key (as renderSealed asks). `ownerAt` names an item's row, for errors.
 */
export function packedItems<R extends SealedRow>(
  projectId: string,
  environmentId: string,
  rows: readonly R[],
  idOf: (r: R) => string,
  ownerOf: (r: R) => string,
): { items: PackedItems; ownerAt: (index: number) => string | undefined } {
  let count = 0;
  let blobBytes = 0;
  for (const r of rows) {
    count += r.commentBlob ? 2 : 1;
    blobBytes += r.valueBlob.length + (r.commentBlob?.length ?? 0);
  }
  const blobs = new Uint8Array(blobBytes);
  const blobEnds = new Uint32Array(count);
  const aadEnds = new Uint32Array(count);
  const rowOf = new Uint32Array(count);
  let aads = Buffer.allocUnsafe(Math.max(64, count * 192));
  const folderParts = new Map<string, Buffer>();
  let n = 0;
  let blobAt = 0;
  let aadAt = 0;
  const put = (r: R, row: number, blob: Buffer, part: 'value' | 'comment') => {
    blobs.set(blob, blobAt);
    blobEnds[n] = blobAt += blob.length;
    let folder = folderParts.get(r.folderId);
    if (folder === undefined) folderParts.set(r.folderId, (folder = Buffer.from(aadOfFolder({ projectId, environmentId, folderId: r.folderId }), 'utf8')));
    const rest = aadInFolder(part, { secretId: idOf(r), key: r.key, version: r.version });
    const most = folder.length + rest.length * 3;
    if (aadAt + most > aads.length) {
      const grown = Buffer.allocUnsafe(Math.max(aads.length * 2, aadAt + most));
      aads.copy(grown, 0, 0, aadAt);
      aads = grown;
    }
    aads.set(folder, aadAt);
    aadAt += folder.length;
    aadAt += aads.write(rest, aadAt, 'utf8');
    aadEnds[n] = aadAt;
    rowOf[n++] = row;
  };
  rows.forEach((r, row) => {
    put(r, row, r.valueBlob, 'value');
    if (r.commentBlob) put(r, row, r.commentBlob, 'comment');
  });
  return {
    items: { blobs, blobEnds, aads: aads.subarray(0, aadAt), aadEnds },
    ownerAt: (index) => (index >= 0 && index < count ? ownerOf(rows[rowOf[index]!]!) : undefined),
  };
}

/** Splits what openSealed returned for sealedItems(rows) back into values and comments. */
export function valuesAndComments(rows: readonly SealedRow[], plain: readonly string[], withValues = true) {
  const values: string[] = [];
  const comments: string[] = [];
  let i = 0;
  for (const r of rows) {
    if (withValues) values.push(plain[i++]!);
    comments.push(r.commentBlob ? plain[i++]! : '');
  }
  return { values, comments };
}

/**
 * Opens every item with the data key its row names: one crypto task per key (one, except
 * while an online re-key of the project runs: then up to two, the old and the new). A
 * blob that does not open (altered in storage, or copied from another row) is not bad
 * input: it is a 500 DecryptionFailed naming its row. A data key that does not unwrap is
 * a 500 DecryptionFailed naming the project. Any other failure (crypto unavailable: 503)
 * passes through unchanged.
 */
export async function openSealed(crypto: Pick<Crypto, 'openMany'>, project: Pick<ProjectRecord, 'id'>, items: SealedItem[]): Promise<string[]> {
  if (items.length === 0) return [];
  const byKey = new Map<string, number[]>();
  items.forEach((item, n) => {
    const at = byKey.get(item.dataKeyId);
    if (at) at.push(n);
    else byKey.set(item.dataKeyId, [n]);
  });
  const out: string[] = new Array<string>(items.length);
  // The positions of the group being opened, to name the row of an OPEN_FAILED.
  let group: number[] = [];
  try {
    for (const [keyId, at] of byKey) {
      group = at;
      const plain = await crypto.openMany(items[at[0]!]!.wrappedKey, dataKeyAad(keyId), at.map((n) => items[n]!));
      at.forEach((n, i) => (out[n] = plain[i]!));
    }
    return out;
  } catch (err) {
    throw openError(err, project, (index) => items[group[index] ?? -1]?.owner);
  }
}

/**
 * The project's current data key, read and held inside the write's transaction (see
 * storage projects.sealingKey): never the cached record's, which an online re-key may
 * have replaced. The rows written must name it (dataKeyId).
 */
export async function sealingKey(s: Pick<TxStores, 'projects'>, project: Pick<ProjectRecord, 'id'>): Promise<{ id: string; wrapped: Buffer }> {
  const key = await s.projects.sealingKey(project.id);
  // Deleted since it was authorised: as if it had not been found.
  if (!key) throw new AppError('NOT_FOUND', `Project with ID '${project.id}' not found`);
  return key;
}

/** How many sealed values segments leave room for. */
const slots = (s: Segments) => (Array.isArray(s) ? s.length : s.ends.length) - 1;
/** The text of segments that leave no room for a sealed value. */
const whole = (s: Segments) => (Array.isArray(s) ? s[0]! : s.text);

/**
 * renderSealed's answer: the finished bytes (the plaintexts only ever inside them), or
 * `refused` when a plaintext held `refuseIf`.
 */
export type RenderedSealed = { bytes: Buffer; refused?: undefined } | { bytes?: undefined; refused: true };

/**
 * Opens `items` in one crypto task and has the worker write them, as JSON string
 * literals, between `segments` (see Crypto.render); the worker keeps the bytes under
 * `cacheKey`, which must name an exact version of every input. `cached`: ask the
 * worker's cache first (a task that carries the key alone); `itemsOf` is only called when
 * the blobs must be sent. `segments` as a function: shaped while the worker opens the
 * values (a first render). Every item must be sealed under `dataKey` (one key: during an
 * online re-key, a folder under two keys is answered by openSealed). Failures as openSealed.
 */
export async function renderSealed(
  crypto: Pick<Crypto, 'render' | 'rendered'>,
  project: Pick<ProjectRecord, 'id'>,
  dataKey: { id: string; wrapped: Buffer },
  cacheKey: string,
  segments: Segments | (() => Segments),
  itemsOf: () => ReturnType<typeof packedItems>,
  opts: { refuseIf?: string; cached?: boolean } = {},
): Promise<RenderedSealed> {
  // Nothing sealed: the bytes are the (non-secret) segment alone.
  if (typeof segments !== 'function' && slots(segments) === 0) return { bytes: Buffer.from(whole(segments), 'utf8') };
  if (opts.cached) {
    const hit = await crypto.rendered(cacheKey);
    if (hit !== undefined) return hit;
  }
  // Built only when the worker needs them (a first render, or a worker that has not cached it).
  const { items, ownerAt } = itemsOf();
  if (items.blobEnds.length === 0 && typeof segments === 'function') return { bytes: Buffer.from(whole(segments()), 'utf8') };
  try {
    return await crypto.render(dataKey.wrapped, dataKeyAad(dataKey.id), cacheKey, segments, items, opts.refuseIf);
  } catch (err) {
    throw openError(err, project, ownerAt);
  }
}

/**
 * renderSealed for rows that arrive in parts (a folder being read): each part is packed
 * and sent to the worker as it comes, so the values are opened while the rest are read.
 * `end` once the last part is in (the worker then asks for `segments`); `abandon` drops
 * the render (its result rejects, and is not reported as unhandled). Every row must be
 * under `dataKey`. Failures as renderSealed.
 */
export function renderSealedParts<R extends SealedRow>(
  crypto: Pick<Crypto, 'render'>,
  project: Pick<ProjectRecord, 'id'>,
  environmentId: string,
  dataKey: { id: string; wrapped: Buffer },
  cacheKey: string,
  idOf: (r: R) => string,
  ownerOf: (r: R) => string,
  segments: () => Segments,
  opts: { refuseIf?: string } = {},
) {
  const parts = new Readable({ objectMode: true, read() {} });
  // Abandoning destroys the parts with an error, which the render reading them reports:
  // never an 'error' event with no listener, whatever the render has done by then.
  parts.on('error', () => {});
  // Where each part's items start, to name the row of an OPEN_FAILED among all of them.
  const owners: Array<{ from: number; ownerAt: (index: number) => string | undefined }> = [];
  let sent = 0;
  const ownerAt = (index: number) => {
    for (let k = owners.length - 1; k >= 0; k--) if (index >= owners[k]!.from) return owners[k]!.ownerAt(index - owners[k]!.from);
    return undefined;
  };
  const result = crypto.render(dataKey.wrapped, dataKeyAad(dataKey.id), cacheKey, segments, parts, opts.refuseIf).catch((err: unknown) => {
    throw openError(err, project, ownerAt);
  });
  // It may fail while the rows are still being read, before the caller awaits it.
  result.catch(() => {});
  return {
    push(rows: readonly R[]): void {
      const packed = packedItems(project.id, environmentId, rows, idOf, ownerOf);
      owners.push({ from: sent, ownerAt: packed.ownerAt });
      sent += packed.items.blobEnds.length;
      parts.push(packed.items);
    },
    end(): void {
      parts.push(null);
    },
    abandon(): void {
      parts.destroy(new Error('render abandoned'));
    },
    result,
  };
}

/**
 * A blob that does not open is a 500 DecryptionFailed naming its row; a data key that does
 * not unwrap, one naming the project; anything else (crypto unavailable: 503) unchanged.
 */
function openError(err: unknown, project: Pick<ProjectRecord, 'id'>, ownerAt: (index: number) => string | undefined): unknown {
  const { code, index } = err as { code?: unknown; index?: unknown };
  if (code === 'OPEN_FAILED') {
    const owner = typeof index === 'number' ? ownerAt(index) : undefined;
    return new AppError(
      'INTERNAL',
      `Stored ${owner ?? 'secret'} could not be decrypted: its stored data was altered or belongs to another secret`,
      { errorName: 'DecryptionFailed' },
    );
  }
  if (code === 'UNWRAP_FAILED') {
    return new AppError('INTERNAL', `The data key of project ${project.id} could not be unwrapped: it was altered or belongs to another key`, {
      errorName: 'DecryptionFailed',
    });
  }
  return err;
}

/** Seals one version's value (and comment, when there is one) in one task, under the project's current data key. */
export async function sealVersion(
  crypto: Pick<Crypto, 'sealMany'>,
  s: Pick<TxStores, 'projects'>,
  project: Pick<ProjectRecord, 'id'>,
  at: SealedAt,
  value: string,
  comment: string | undefined,
) {
  const key = await sealingKey(s, project);
  const items = [{ plaintext: value, aad: secretAad('value', at) }];
  if (comment) items.push({ plaintext: comment, aad: secretAad('comment', at) });
  const [valueBlob, commentBlob] = await crypto.sealMany(key.wrapped, dataKeyAad(key.id), items);
  return { valueBlob: valueBlob!, commentBlob: commentBlob ?? null, dataKeyId: key.id };
}

/** Seals many values (and comments) of one project in one task, in order, under its current data key. */
export async function sealMany(
  crypto: Pick<Crypto, 'sealMany'>,
  s: Pick<TxStores, 'projects'>,
  project: Pick<ProjectRecord, 'id'>,
  items: { plaintext: string; aad: string }[],
): Promise<{ blobs: Buffer[]; dataKeyId: string }> {
  const key = await sealingKey(s, project);
  return { blobs: await crypto.sealMany(key.wrapped, dataKeyAad(key.id), items), dataKeyId: key.id };
}
