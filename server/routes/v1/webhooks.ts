// Infisical's webhooks at its paths (backend/src/server/routes/v1/webhook-router.ts):
// POST /api/v1/webhooks, GET ?projectId=, PATCH and DELETE /:webhookId, POST /:webhookId/test.
// People only (Infisical's routes take a user's JWT), project admins (its Webhooks
// permission). Answers carry Infisical's sanitized webhook (no URL, no key); the list adds
// `url`, as Infisical's does, to the project's admins who may list. Beyond Infisical:
// `delivery`, the state of the webhook's deliveries (server/domain/webhookWorker.ts).
import { z } from 'zod';
import { WEBHOOK_EVENTS, WEBHOOK_TYPES, type WebhookView } from '../../domain/webhooks.js';
import type { Services } from '../../services.js';
import type { Api } from '../api.js';
import { isoString } from '../shape.js';

const eventsFilter = z.array(z.object({ eventName: z.enum(WEBHOOK_EVENTS, { error: `eventName must be one of ${WEBHOOK_EVENTS.join(', ')}` }) }).strict()).max(10);

const delivery = z.object({
  state: z.enum(['idle', 'pending', 'retrying', 'dead', 'disabled']),
  attempts: z.number().int(),
  nextAttemptAt: isoString.nullable(),
  lastAttemptAt: isoString.nullable(),
  lastHttpStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  lastEventId: z.number().int().nullable(),
  pendingEventId: z.number().int().nullable(),
  deadAt: isoString.nullable(),
});

const webhookSchema = z.object({
  id: z.string(),
  projectId: z.string(),
  envId: z.string(),
  environment: z.object({ id: z.string(), name: z.string(), slug: z.string() }),
  secretPath: z.string(),
  type: z.enum(WEBHOOK_TYPES),
  isDisabled: z.boolean(),
  lastStatus: z.enum(['success', 'failed']).nullable(),
  lastRunErrorMessage: z.string().nullable(),
  eventsFilter: z.array(z.object({ eventName: z.enum(WEBHOOK_EVENTS) })),
  createdAt: isoString,
  updatedAt: isoString,
  delivery,
});
const listed = webhookSchema.extend({ url: z.string() });

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function shape(w: WebhookView): z.infer<typeof webhookSchema> {
  const state = w.isDisabled ? 'disabled' : w.deadAt ? 'dead' : w.pendingEventId !== null ? 'retrying' : 'idle';
  return {
    id: w.id,
    projectId: w.projectId,
    envId: w.environmentId,
    environment: { id: w.environmentId, name: w.environmentName, slug: w.environmentSlug },
    secretPath: w.secretPath,
    type: w.type,
    isDisabled: w.isDisabled,
    lastStatus: w.lastStatus,
    lastRunErrorMessage: w.lastError,
    eventsFilter: w.eventsFilter.filter((e): e is (typeof WEBHOOK_EVENTS)[number] => (WEBHOOK_EVENTS as readonly string[]).includes(e)).map((eventName) => ({ eventName })),
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
    delivery: {
      state,
      attempts: w.attempts,
      nextAttemptAt: iso(w.nextAttemptAt),
      lastAttemptAt: iso(w.lastAttemptAt),
      lastHttpStatus: w.lastHttpStatus,
      lastError: w.lastError,
      lastEventId: w.lastEventId,
      pendingEventId: w.pendingEventId,
      deadAt: iso(w.deadAt),
    },
  };
}

const createBody = z.object({
  type: z.enum(WEBHOOK_TYPES, { error: `type must be one of ${WEBHOOK_TYPES.join(', ')}` }).optional(),
  projectId: z.string({ error: 'projectId must be a string' }).trim().min(1).max(64),
  environment: z.string({ error: 'environment must be a string' }).trim().min(1).max(64),
  webhookUrl: z.string({ error: 'webhookUrl must be a string' }).trim().min(1).max(2048),
  webhookSecretKey: z.string({ error: 'webhookSecretKey must be a string' }).max(512).optional(),
  secretPath: z.string({ error: 'secretPath must be a string' }).max(1024).optional(),
  eventsFilter: eventsFilter.optional(),
});
const updateBody = z.object({ isDisabled: z.boolean({ error: 'isDisabled must be a boolean' }).optional(), eventsFilter: eventsFilter.optional() });
const idParams = z.object({ webhookId: z.string().max(64) });
const listQuery = z.object({
  projectId: z.string({ error: 'projectId is required' }).trim().min(1, 'projectId is required').max(64),
  environment: z.string().trim().max(64).optional(),
  secretPath: z.string().trim().max(1024).optional(),
});
const one = z.object({ message: z.string(), webhook: webhookSchema });

export function registerWebhookRoutes(api: Api, svc: Services) {
  api.post('/api/v1/webhooks', { caller: 'user', summary: 'Create a webhook (Infisical\'s fields; the URL and key are stored sealed)', body: createBody, response: one }, async ({ actor, body, origin }) => {
    const webhook = await svc.webhooks.create(actor, { ...body, eventsFilter: body.eventsFilter?.map((e) => e.eventName) }, origin);
    return { body: { message: 'Successfully created webhook', webhook: shape(webhook) } };
  });

  api.get(
    '/api/v1/webhooks',
    { caller: 'user', summary: 'The project\'s webhooks, with their URLs and delivery state (project admins)', query: listQuery, response: z.object({ message: z.string(), webhooks: z.array(listed) }) },
    async ({ actor, query }) => {
      const secretPath = query.secretPath ? (query.secretPath.length > 1 ? query.secretPath.replace(/\/+$/, '') : query.secretPath) : undefined;
      const rows = await svc.webhooks.list(actor, query.projectId, { environment: query.environment || undefined, secretPath });
      return { body: { message: 'Successfully fetched webhook', webhooks: rows.map((w) => ({ ...shape(w), url: w.url ?? '' })) } };
    },
  );

  api.patch('/api/v1/webhooks/:webhookId', { caller: 'user', summary: 'Enable or disable a webhook (enabling resumes a dead one), or change its events filter', params: idParams, body: updateBody, response: one }, async ({ actor, params, body, origin }) => {
    const webhook = await svc.webhooks.update(actor, params.webhookId, { isDisabled: body.isDisabled, eventsFilter: body.eventsFilter?.map((e) => e.eventName) }, origin);
    svc.webhookWorker.kick();
    return { body: { message: 'Successfully updated webhook', webhook: shape(webhook) } };
  });

  api.delete('/api/v1/webhooks/:webhookId', { caller: 'user', summary: 'Delete a webhook', params: idParams, response: one }, async ({ actor, params, origin }) => {
    const webhook = await svc.webhooks.remove(actor, params.webhookId, origin);
    return { body: { message: 'Successfully deleted webhook', webhook: shape(webhook) } };
  });

  api.post('/api/v1/webhooks/:webhookId/test', { caller: 'user', summary: 'Send Infisical\'s test event to the webhook now; its outcome is the answer\'s lastStatus', params: idParams, response: one }, async ({ actor, params, origin }) => {
    const webhook = await svc.webhooks.test(actor, params.webhookId, origin);
    return { body: { message: 'Successfully tested webhook', webhook: shape(webhook) } };
  });
}
