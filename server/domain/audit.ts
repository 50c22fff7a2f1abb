// Reading the audit trail: the superadmin sees every entry; a project admin sees the
// entries of its project only. Entries are written by the domain that makes each change,
// inside its transaction (storage/audit.ts append), never here.
import type { Store } from '../../storage/index.js';
import type { AuditFilter, AuditListRow } from '../../storage/audit.js';
import { AppError } from '../errors.js';
import { requireOrgAdmin, type AccessControl, type Actor, type SystemActor } from './access.js';

export interface AuditDeps {
  store: Pick<Store, 'audit'>;
  access: Pick<AccessControl, 'authorize'>;
}

export type AuditQuery = Omit<AuditFilter, 'offset' | 'limit'> & { offset?: number; limit?: number };

export const AUDIT_DEFAULT_LIMIT = 20;
export const AUDIT_MAX_LIMIT = 100;

export function auditDomain(deps: AuditDeps) {
  const { store, access } = deps;
  return {
    async list(actor: Actor | SystemActor, q: AuditQuery): Promise<AuditListRow[]> {
      const superadmin = actor.kind === 'system' || (actor.kind === 'user' && actor.superadmin === true);
      let projectId = q.projectId;
      if (!superadmin) {
        if (projectId === undefined) {
          throw new AppError('FORBIDDEN', 'You are not allowed to access this resource; project admins list with their projectId');
        }
        projectId = (await access.authorize(actor, { id: projectId }, 'project:admin')).project.id;
      } else if (projectId !== undefined) {
        projectId = projectId.toLowerCase();
      }
      const limit = q.limit ?? AUDIT_DEFAULT_LIMIT;
      const offset = q.offset ?? 0;
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > AUDIT_MAX_LIMIT) {
        throw new AppError('VALIDATION', `limit must be an integer from 1 to ${AUDIT_MAX_LIMIT}`);
      }
      if (!Number.isSafeInteger(offset) || offset < 0) throw new AppError('VALIDATION', 'offset must be a non-negative integer');
      if (q.startDate && q.endDate && q.startDate > q.endDate) throw new AppError('VALIDATION', 'startDate must not be after endDate');
      return store.audit.list({ ...q, projectId, limit, offset });
    },

    /** Walks the whole hash chain (superadmin only: it reads every entry). */
    async verify(actor: Actor | SystemActor) {
      requireOrgAdmin(actor);
      return store.audit.verify();
    },
  };
}
export type AuditDomain = ReturnType<typeof auditDomain>;
