// Sealed secret values and comments: the one place they are opened and sealed.
// Every read that decrypts (lists, single reads, history, restore, export, references)
// goes through openSealed, so a blob that does not open is answered the same way
// everywhere: a 500 DecryptionFailed that names the row, never a value or a guess.
import type { Crypto } from '../../crypto/index.js';
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
  return `vault-standalone:secret:v1:${p.projectId}:${p.environmentId}:${p.folderId}:${p.secretId}:${p.key}:${p.version}:${part}`;
}

/** One blob to open, and the row it belongs to (named when it does not open). */
export interface SealedItem {
  blob: Buffer;
  aad: string;
  owner: string;
}

/** A row holding a sealed value and maybe a comment: a secret, or one version of it. */
export interface SealedRow {
  folderId: string;
  key: string;
  version: number;
  valueBlob: Buffer;
  commentBlob: Buffer | null;
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
    const owner = ownerOf(r);
    if (withValues) items.push({ blob: r.valueBlob, aad: secretAad('value', at), owner });
    if (r.commentBlob) items.push({ blob: r.commentBlob, aad: secretAad('comment', at), owner });
  }
  return items;
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
 * Opens every item in one crypto task. A blob that does not open (altered in storage,
 * or copied from another row) is not bad input: it is a 500 DecryptionFailed naming its
 * row. A data key that does not unwrap is a 500 DecryptionFailed naming the project.
 * Any other failure (crypto unavailable: 503) passes through unchanged.
 */
export async function openSealed(crypto: Pick<Crypto, 'openMany'>, project: ProjectRecord, items: SealedItem[]): Promise<string[]> {
  if (items.length === 0) return [];
  try {
    return await crypto.openMany(project.wrappedDataKey, dataKeyAad(project.dataKeyId), items);
  } catch (err) {
    throw openError(err, project, items);
  }
}

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
 * the blobs must be sent. Failures as openSealed.
 */
export async function renderSealed(
  crypto: Pick<Crypto, 'render' | 'rendered'>,
  project: ProjectRecord,
  cacheKey: string,
  segments: string[],
  itemsOf: () => SealedItem[],
  opts: { refuseIf?: string; cached?: boolean } = {},
): Promise<RenderedSealed> {
  // Nothing sealed: the bytes are the (non-secret) segment alone.
  if (segments.length === 1) return { bytes: Buffer.from(segments[0]!, 'utf8') };
  if (opts.cached) {
    const hit = await crypto.rendered(cacheKey);
    if (hit !== undefined) return hit;
  }
  // Built only when the worker needs them (a first render, or a worker that has not cached it).
  const items = itemsOf();
  try {
    return await crypto.render(project.wrappedDataKey, dataKeyAad(project.dataKeyId), cacheKey, segments, items, opts.refuseIf);
  } catch (err) {
    throw openError(err, project, items);
  }
}

/**
 * A blob that does not open is a 500 DecryptionFailed naming its row; a data key that does
 * not unwrap, one naming the project; anything else (crypto unavailable: 503) unchanged.
 */
function openError(err: unknown, project: ProjectRecord, items: SealedItem[]): unknown {
  const { code, index } = err as { code?: unknown; index?: unknown };
  if (code === 'OPEN_FAILED') {
    const owner = typeof index === 'number' ? items[index]?.owner : undefined;
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

/** Seals one version's value (and comment, when there is one) in one task. */
export async function sealVersion(crypto: Pick<Crypto, 'sealMany'>, project: ProjectRecord, at: SealedAt, value: string, comment: string | undefined) {
  const items = [{ plaintext: value, aad: secretAad('value', at) }];
  if (comment) items.push({ plaintext: comment, aad: secretAad('comment', at) });
  const [valueBlob, commentBlob] = await crypto.sealMany(project.wrappedDataKey, dataKeyAad(project.dataKeyId), items);
  return { valueBlob: valueBlob!, commentBlob: commentBlob ?? null };
}

/** Seals many values (and comments) of one project in one task, in order. */
export function sealMany(crypto: Pick<Crypto, 'sealMany'>, project: ProjectRecord, items: { plaintext: string; aad: string }[]): Promise<Buffer[]> {
  return crypto.sealMany(project.wrappedDataKey, dataKeyAad(project.dataKeyId), items);
}
