// The audit trail: GET /api/v1/organization/audit-logs (newest first, filtered, paged)
// and GET /api/v1/organization/audit-logs/verify (the keyed chain from its newest keyed
// checkpoint to its anchor, within a bounded wait, beside the latest background full walk:
// server/domain/auditVerifier.ts; the answer adds head, or reason, to the earlier
// { ok, entries, brokenAt }, says when each verdict was reached, and is not ok if either
// walk found a break; ok null while no verdict exists yet); POST …/verify starts a full
// walk now (202 with its run id).
import { z } from 'zod';
import type { AuditListRow } from '../../../storage/audit.js';
import { isUuid } from '../../domain/access.js';
import { AUDIT_MAX_LIMIT } from '../../domain/audit.js';
import { normaliseSecretPath } from '../../domain/paths.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { queryInt as int } from '../input.js';
import { isoString } from '../shape.js';

const date = (name: string) =>
  z
    .string()
    .max(64)
    .transform((s, c) => {
      // ISO 8601 (a date, or a date and time); anything Date.parse would guess at is refused.
      const d = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s) ? new Date(s) : new Date(NaN);
      if (Number.isNaN(d.getTime())) {
        c.addIssue({ code: 'custom', message: `${name} must be an ISO 8601 date` });
        return z.NEVER;
      }
      return d;
    });

const ACTOR_TYPES = { user: 'user', identity: 'identity', platform: 'system', system: 'system' } as const;

const listQuery = z.object({
  projectId: z.string().refine(isUuid, 'projectId must be a project id').optional(),
  environment: z.string().max(64).optional(),
  secretPath: z.string().max(1024).transform((p, c) => {
    try {
      return normaliseSecretPath(p);
    } catch (err) {
      c.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  }).optional(),
  eventType: z.string().max(128).optional(),
  actorType: z.enum(Object.keys(ACTOR_TYPES) as [keyof typeof ACTOR_TYPES]).optional(),
  actor: z.string().max(128).optional(),
  startDate: date('startDate').optional(),
  endDate: date('endDate').optional(),
  offset: int('offset', 0, 1_000_000_000).optional(),
  limit: int('limit', 1, AUDIT_MAX_LIMIT).optional(),
});

const auditLogSchema = z.object({
  id: z.string(),
  event: z.object({ type: z.string(), metadata: z.record(z.string(), z.unknown()) }),
  actor: z.object({ type: z.enum(['user', 'identity', 'platform']), metadata: z.record(z.string(), z.unknown()) }),
  projectId: z.string().nullable(),
  ipAddress: z.string().nullable(),
  userAgent: z.null(),
  createdAt: isoString,
  updatedAt: isoString,
});
const headSchema = z.object({ entries: z.number().int(), legacyEntries: z.number().int(), lastId: z.number().int(), mac: z.string() });
const range = z.object({ entries: z.number().int(), lastId: z.number().int() });
const freshness = {
  checkedAt: isoString,
  ageSeconds: z.number().int(),
  inProgress: z.boolean(),
  verifiedFrom: z.number().int(),
  incremental: z.object({ ok: z.boolean().nullable(), entries: z.number().int(), brokenAt: z.number().int().nullable().optional(), reason: z.string().optional() }),
  fullWalk: z.object({
    last: z
      .object({
        runId: z.string(),
        startedAt: isoString,
        finishedAt: isoString,
        ageSeconds: z.number().int(),
        ok: z.boolean(),
        entries: z.number().int(),
        read: z.number().int(),
        checkpoints: z.number().int(),
        brokenAt: z.number().int().nullable(),
        reason: z.string().nullable(),
        anchored: range.optional(),
        found: range.optional(),
      })
      .nullable(),
    recordInvalid: z.literal(true).optional(),
    running: z.object({ runId: z.string(), startedAt: isoString, entries: z.number().int(), of: z.number().int() }).nullable(),
  }),
};
const verifySchema = z.union([
  z.object({ ok: z.literal(true), entries: z.number().int(), head: headSchema, ...freshness }),
  z.object({
    ok: z.literal(false),
    entries: z.number().int(),
    brokenAt: z.number().int().nullable(),
    reason: z.string(),
    anchored: range.optional(),
    found: range.optional(),
    ...freshness,
  }),
  z.object({ ok: z.null(), entries: z.number().int(), lastId: z.number().int(), of: z.number().int(), ...freshness }),
]);

function actorJson(r: AuditListRow) {
  if (r.actorType === 'user') return { type: 'user', metadata: { userId: r.actorId, email: r.actorEmail, username: r.actorEmail } };
  if (r.actorType === 'identity') return { type: 'identity', metadata: { identityId: r.actorId, name: r.actorName } };
  // The service itself (set-up, CLI): Infisical's "platform" actor.
  return { type: 'platform', metadata: {} };
}

export function auditLogJson(r: AuditListRow) {
  const located: Record<string, unknown> = {};
  if (r.environment !== null) located.environment = r.environment;
  if (r.secretPath !== null) located.secretPath = r.secretPath;
  if (r.secretKey !== null) located.secretKey = r.secretKey;
  if (r.secretVersion !== null) located.secretVersion = r.secretVersion;
  const at = r.at.toISOString();
  return {
    id: String(r.id),
    event: { type: r.eventType, metadata: { ...r.metadata, ...located } },
    actor: actorJson(r),
    projectId: r.projectId,
    ipAddress: r.ip,
    userAgent: null,
    createdAt: at,
    updatedAt: at,
  };
}

export function registerAuditRoutes(api: Api, svc: Services) {
  api.get(
    '/api/v1/organization/audit-logs',
    { caller: 'any', summary: 'The audit trail, newest first, filtered and paged (superadmin; project admins with their projectId)', query: listQuery, response: z.object({ auditLogs: z.array(auditLogSchema) }) },
    async ({ actor, query: q }) => {
      const rows = await svc.audit.list(actor, {
        projectId: q.projectId,
        environment: q.environment,
        secretPath: q.secretPath,
        eventType: q.eventType,
        actorType: q.actorType === undefined ? undefined : ACTOR_TYPES[q.actorType],
        actorId: q.actor,
        startDate: q.startDate,
        endDate: q.endDate,
        offset: q.offset,
        limit: q.limit,
      });
      return { body: { auditLogs: rows.map(auditLogJson) } };
    },
  );

  api.get(
    '/api/v1/organization/audit-logs/verify',
    {
      caller: 'any',
      summary: 'Verify the keyed audit chain from its newest checkpoint to its anchor (a bounded wait), beside the latest background full walk (superadmin)',
      response: verifySchema,
    },
    async ({ actor }) => ({ body: await svc.audit.verify(actor) }),
  );

  api.post(
    '/api/v1/organization/audit-logs/verify',
    {
      caller: 'any',
      summary: 'Start a full walk of every audit entry and checkpoint in the background (after one running now); 202 with its run id (superadmin)',
      response: z.object({ runId: z.string() }),
    },
    ({ actor }) => ({ status: 202, body: svc.audit.requestFullVerify(actor) }),
  );
}
