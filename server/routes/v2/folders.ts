// Folders: POST /api/v2/folders, GET /api/v2/folders, PATCH /api/v2/folders/:folderId
// (a rename; as Infisical, `path` is the folder's parent and a name is taken for an id),
// DELETE /api/v2/folders/:folderIdOrName.
import { z } from 'zod';
import { parseJsonBody } from '../../http/body.js';
import type { FolderView } from '../../domain/projects.js';
import type { Router } from '../../http/types.js';
import type { Services } from '../../services.js';
import { parse, queryObject } from '../input.js';
import { boolish, bodyAndQuery, projectIdRef, ref } from '../writeInput.js';

const scope = {
  projectId: ref,
  workspaceId: ref,
  environment: z.string({ error: 'environment is required' }).min(1).max(64),
  path: z.string().max(1024).optional(),
  /** Infisical's older name for `path`. */
  directory: z.string().max(1024).optional(),
};

const name = z.string({ error: 'name is required' }).min(1).max(64);
const createBody = z.object({ ...scope, name });
const renameBody = z.object({ ...scope, name });
const listQuery = z.object(scope);
const deleteInput = z.object({ ...scope, force: boolish.optional(), overrideImmutable: boolish.optional() });

const folderShape = (f: FolderView) => ({ id: f.id, name: f.name, path: f.path, parentId: f.parentId, envId: f.environmentId });

export function registerFolderRoutes(router: Router, svc: Services) {
  router.post('/api/v2/folders', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(createBody, parseJsonBody(req));
    const folder = await svc.projects.createFolder(actor, {
      project: projectIdRef(b),
      environment: b.environment,
      parentPath: b.path ?? b.directory,
      name: b.name,
    });
    return { body: { folder: folderShape(folder) } };
  });

  router.patch('/api/v2/folders/:folderId', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(renameBody, parseJsonBody(req));
    const folder = await svc.projects.renameFolder(actor, {
      project: projectIdRef(b),
      environment: b.environment,
      path: b.path ?? b.directory,
      folder: req.params.folderId!,
      name: b.name,
    });
    return { body: { folder: folderShape(folder) } };
  });

  router.get('/api/v2/folders', async (req) => {
    const actor = await svc.auth.actor(req);
    const q = parse(listQuery, queryObject(req.query));
    const folders = await svc.projects.listFolders(actor, { project: projectIdRef(q), environment: q.environment, path: q.path ?? q.directory });
    return { body: { folders: folders.map((f) => ({ id: f.id, name: f.name, path: f.path, parentId: f.parentId })) } };
  });

  router.delete('/api/v2/folders/:folderIdOrName', async (req) => {
    const actor = await svc.auth.actor(req);
    const b = parse(deleteInput, bodyAndQuery(req));
    const folder = await svc.projects.deleteFolder(actor, {
      project: projectIdRef(b),
      environment: b.environment,
      path: b.path ?? b.directory,
      folder: req.params.folderIdOrName!,
      force: b.force,
      overrideImmutable: b.overrideImmutable,
    });
    return { body: { folder: { id: folder.id, name: folder.name, path: folder.path, parentId: folder.parentId } } };
  });
}
