// The ciphertext of a folder (or a subtree) as the hot path reads it: from the folder
// cache, version-stamped and invalidated on every change, the database on a miss.
import type { Store } from '../../storage/index.js';
import type { EnvironmentRow } from '../../storage/projects.js';
import type { CipherRowPart } from '../../storage/secrets.js';
import { AppError } from '../errors.js';
import type { Caches, FolderSnapshot } from './caches.js';

export const folderNotFound = (path: string, env: EnvironmentRow) =>
  new AppError('SECRET_PATH_NOT_FOUND', `Folder with path '${path}' in environment '${env.slug}' not found`);

export interface SnapshotDeps {
  store: { folders: Pick<Store['folders'], 'subtree' | 'byPath'>; secrets: Pick<Store['secrets'], 'listByFolders'>; secretTags?: Pick<Store['secretTags'], 'linksOfFolders'> };
  caches: Pick<Caches, 'folders'>;
}

export function folderSnapshots(deps: SnapshotDeps) {
  const { store, caches } = deps;
  const keyOf = (env: EnvironmentRow, path: string, recursive: boolean) => `${env.id}:${recursive ? 'r' : 'f'}:${path}`;
  return {
    /** The snapshot held for the folder now (the hot path: no promise), or undefined: then get(). */
    held(env: EnvironmentRow, path: string, recursive: boolean): FolderSnapshot | undefined {
      // A held absence (null) is undefined here: get() answers it (404).
      return caches.folders.peek(keyOf(env, path, recursive)) ?? undefined;
    },

    /**
     * The folder at `path` (and everything below it when recursive); 404 when it does not
     * exist. `onRows`: when this call reads the rows (not cached, nor being read for another
     * caller), each part of them as it is read (see listByFolders).
     */
    async get(env: EnvironmentRow, path: string, recursive: boolean, onRows?: (part: CipherRowPart) => void): Promise<FolderSnapshot> {
      const snap = await caches.folders.get(keyOf(env, path, recursive), async () => {
        const folders = recursive
          ? await store.folders.subtree(env.id, path)
          : [await store.folders.byPath(env.id, path)].filter((f) => f !== undefined);
        if (folders[0]?.path !== path) return null;
        const ids = folders.map((f) => f.id);
        // Tag links change only with a secret write (which drops the snapshot, also one
        // loading now: the cache's generations) or a tag delete (whose ids then resolve to
        // nothing). Read beside the rows, not after them: neither waits for the other.
        const [rows, links] = await Promise.all([store.secrets.listByFolders(ids, onRows), store.secretTags?.linksOfFolders(ids)]);
        const tagIds = rows.length > 0 ? links : undefined;
        return { folders, rows, tagIds };
      });
      if (!snap) throw folderNotFound(path, env);
      return snap;
    },
  };
}
export type FolderSnapshots = ReturnType<typeof folderSnapshots>;
