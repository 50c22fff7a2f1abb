// Webhooks, wire-compatible with Infisical's (its backend/src/server/routes/v1/webhook-router.ts,
// services/webhook/webhook-service.ts and webhook-fns.ts): create, list, update
// (isDisabled, eventsFilter), delete and test, for project admins (Infisical's Webhooks
// permission; people only, as its routes take a user's JWT). What is sent, byte for byte:
//
//   body    = JSON.stringify({ ...payload, timestamp: <ms> })
//   header  x-infisical-signature: t=<ms>;<hex HMAC-SHA256(key = the secret key's UTF-8, message = body)>
//
// (webhook-fns.ts triggerWebhookRequest: the HMAC is over JSON.stringify of the object
// axios then sends, so it is the body's bytes; no header without a key.) Beyond
// Infisical: x-vault-event-id (the last event the delivery covers, for dedup) and
// x-vault-delivery-attempt; delivery from the event table with retries (webhookWorker.ts).
//
// The URL and the key are credentials: sealed under a data key of the webhook's own
// (bound to the webhook by their associated data), opened only to deliver and to answer a
// list to the project's admins (Infisical's list answers the URL; nothing answers the
// key), never logged, never in the audit trail (its entries name the webhook's id).
import { createHmac, randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import { WEBHOOK_TYPES, type WebhookRow, type WebhookType } from '../../storage/webhooks.js';
import { AppError } from '../errors.js';
import { isUuid, type Actor } from './access.js';
import { FetchRefused, webhookLookup, webhookTargetRefusal, webhookUrlRefusal, type WebhookTargetPolicy } from './fetchGuard.js';
import { globMatch } from './glob.js';
import { dataKeyAad } from './keyring.js';
import { normaliseSecretPath } from './paths.js';
import type { Origin, WritePipeline } from './pipeline.js';
import { CONTROL_CHARACTER } from './text.js';

/** Infisical's subscribable events (webhook-types.ts SUBSCRIBABLE_WEBHOOK_EVENTS); every change event here is `secrets.modified`. */
export const WEBHOOK_EVENTS = ['secrets.modified', 'secrets.rotation-failed'] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];
export { WEBHOOK_TYPES, type WebhookType };

export const SIGNATURE_HEADER = 'x-infisical-signature';
export const EVENT_ID_HEADER = 'x-vault-event-id';
export const ATTEMPT_HEADER = 'x-vault-delivery-attempt';

export const LIMITS = { url: 2048, secretKey: 512, secretPath: 1024 };

/** What binds a webhook's sealed URL or key to it. */
export const webhookAad = (webhookId: string, part: 'url' | 'key') => `vault-standalone:webhook:v1:${webhookId}:${part}`;

// -- payloads ----------------------------------------------------------------------------

export interface PayloadFacts {
  projectId: string;
  projectName: string;
  environment: string;
  environmentName: string;
  secretPath: string;
  /** Who made the change (absent for a test event). */
  changedBy?: string;
  changedByActorType?: string;
}

/** Infisical's actor types (ActorType): the service itself is its `platform`. */
export const infisicalActorType = (actorType: string) => (actorType === 'system' ? 'platform' : actorType);

/** The body of a delivery before its timestamp, in the webhook's format (Infisical's getWebhookPayload). */
export function webhookPayload(type: WebhookType, event: 'secrets.modified' | 'test', f: PayloadFacts): Record<string, unknown> {
  if (event === 'secrets.modified' && type === 'slack') {
    const field = (title: string, value: string | undefined) => ({ title, value, short: false });
    return {
      text: 'A secret value has been added or modified.',
      attachments: [
        {
          color: '#E7F256',
          fields: [
            field('Project', f.projectName),
            field('Environment', f.environment),
            field('Environment Name', f.environmentName),
            field('Secret Path', f.secretPath),
            field('Modified By', f.changedBy),
            field('Modified By Actor Type', f.changedByActorType ?? 'Unknown Actor Type'),
          ],
        },
      ],
    };
  }
  if (event === 'secrets.modified' && type === 'microsoft-teams') {
    return {
      type: 'message',
      attachments: [
        {
          contentType: 'application/vnd.microsoft.card.adaptive',
          content: {
            type: 'AdaptiveCard',
            version: '1.2',
            body: [
              { type: 'TextBlock', size: 'Medium', weight: 'Bolder', text: 'A secret value has been added or modified.' },
              {
                type: 'FactSet',
                facts: [
                  { title: 'Project', value: f.projectName },
                  { title: 'Environment', value: f.environment },
                  { title: 'Environment Name', value: f.environmentName },
                  { title: 'Secret Path', value: f.secretPath },
                  { title: 'Modified By', value: f.changedBy ?? '' },
                  { title: 'Actor Type', value: f.changedByActorType ?? 'Unknown Actor Type' },
                ],
              },
            ],
          },
        },
      ],
    };
  }
  const project: Record<string, unknown> = {
    workspaceId: f.projectId,
    projectId: f.projectId,
    projectName: f.projectName,
    environment: f.environment,
    environmentName: f.environmentName,
    secretPath: f.secretPath,
  };
  if (event === 'secrets.modified') {
    project.changedBy = f.changedBy;
    project.changedByActorType = f.changedByActorType;
  }
  return { event, project };
}

/** The bytes sent and the signature header (when there is a key), as Infisical's triggerWebhookRequest makes them. */
export function signedBody(payload: Record<string, unknown>, secretKey: string, now: number): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ ...payload, timestamp: now });
  const headers: Record<string, string> = {};
  if (secretKey) headers[SIGNATURE_HEADER] = `t=${now};${createHmac('sha256', secretKey).update(body).digest('hex')}`;
  return { body, headers };
}

// -- sending -----------------------------------------------------------------------------

export interface SendOptions {
  policy: WebhookTargetPolicy;
  timeoutMs: number;
}

/** A delivery's outcome; `error` names what failed (never the URL, a header or the body). */
export type SendOutcome = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/**
 * POSTs `body` to `url`: the target checked (literal now, every resolved address at
 * connect time), no redirect followed (a 3xx is a failure), the whole exchange bounded
 * by `timeoutMs`; the answer's body is read and dropped. 2xx is success.
 */
export function sendWebhook(url: string, body: string, headers: Record<string, string>, opts: SendOptions): Promise<SendOutcome> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve({ ok: false, status: null, error: 'the stored URL is not a URL' });
  }
  const refused = webhookUrlRefusal(target, opts.policy);
  if (refused) return Promise.resolve({ ok: false, status: null, error: `refused: ${refused}` });
  return new Promise((resolve) => {
    let done = false;
    const finish = (o: SendOutcome) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(o);
    };
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(target, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'user-agent': 'vault-standalone-webhook',
        ...headers,
      },
      lookup: webhookLookup(target, opts.policy) as never,
      agent: false,
    });
    const timer = setTimeout(() => finish({ ok: false, status: null, error: `no answer within ${opts.timeoutMs} ms` }), opts.timeoutMs);
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      res.on('data', () => {});
      res.on('error', () => {});
      res.on('end', () => {
        if (status >= 200 && status < 300) finish({ ok: true, status });
        else if (status >= 300 && status < 400) finish({ ok: false, status, error: `HTTP ${status} (redirects are not followed)` });
        else finish({ ok: false, status, error: `HTTP ${status}` });
      });
    });
    req.on('error', (err: Error & { code?: string }) => {
      if (err instanceof FetchRefused) finish({ ok: false, status: null, error: `refused: ${err.message}` });
      else finish({ ok: false, status: null, error: err.code ?? 'connection failed' });
    });
    req.end(body);
  });
}

// -- matching ----------------------------------------------------------------------------

/** A change at `path` is for a webhook at `pattern`: Infisical's picomatch (a glob, or the exact path; `/x/**` also matches `/x`). */
export function webhookPathMatches(path: string, pattern: string): boolean {
  if (globMatch(path, pattern)) return true;
  return pattern.endsWith('/**') && path === (pattern.slice(0, -3) || '/');
}

/** Whether the webhook's events filter lets `secrets.modified` through (empty: everything). */
export const wantsModified = (filter: readonly string[]) => filter.length === 0 || filter.includes('secrets.modified');

// -- the domain --------------------------------------------------------------------------

export interface WebhookInput {
  projectId: string;
  environment: string;
  webhookUrl: string;
  webhookSecretKey?: string;
  secretPath?: string;
  type?: WebhookType;
  eventsFilter?: WebhookEventName[];
}

/** A webhook as answered: the row, and its URL when the answer carries it (a list). */
export type WebhookView = WebhookRow & { url?: string };

export interface WebhooksDeps {
  store: { webhooks: Pick<Store['webhooks'], 'byId' | 'ofProject' | 'sealed'> };
  crypto: Pick<Crypto, 'generateDataKey' | 'sealMany' | 'openMany' | 'rootKeyVersion'>;
  changes: Pick<WritePipeline, 'inProject'>;
  policy: WebhookTargetPolicy;
  timeoutMs: number;
  /** Tests replace name resolution (a create's SSRF check). */
  resolve?: Parameters<typeof webhookTargetRefusal>[2];
}

const invalid = (message: string) => new AppError('VALIDATION', message);
const notFound = (id: string) => new AppError('NOT_FOUND', `Webhook with ID '${id.slice(0, 64)}' not found`);

export function webhooksDomain(deps: WebhooksDeps) {
  const { store, crypto, changes } = deps;

  /** The webhook and a grant in its project: 404 alike for a missing webhook and one of a project the caller is not a member of. */
  async function granted(actor: Actor, id: string, origin?: Origin) {
    const row = isUuid(id) ? await store.webhooks.byId(id.toLowerCase()) : undefined;
    if (!row) throw notFound(id);
    try {
      return { row, grant: await changes.inProject(actor, { id: row.projectId }, 'project:admin', origin) };
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw notFound(id);
      throw err;
    }
  }

  async function open(id: string): Promise<{ url: string; secretKey: string } | undefined> {
    const sealed = await store.webhooks.sealed(id);
    if (!sealed) return undefined;
    const items = [{ blob: sealed.urlBlob, aad: webhookAad(id, 'url') }];
    if (sealed.keyBlob) items.push({ blob: sealed.keyBlob, aad: webhookAad(id, 'key') });
    const [url, secretKey] = await crypto.openMany(sealed.wrappedKey, dataKeyAad(sealed.dataKeyId), items);
    return { url: url!, secretKey: secretKey ?? '' };
  }

  function checkFilter(filter: readonly string[] | undefined): string[] | undefined {
    if (filter === undefined) return undefined;
    return [...new Set(filter)];
  }

  return {
    open,

    async create(actor: Actor, input: WebhookInput, origin?: Origin): Promise<WebhookView> {
      const grant = await changes.inProject(actor, { id: input.projectId }, 'project:admin', origin);
      const env = grant.project.environments.find((e) => e.slug === input.environment);
      if (!env) throw new AppError('NOT_FOUND', `Environment with slug '${input.environment.slice(0, 64)}' in project with ID '${grant.project.id}' not found`);
      const rawPath = (input.secretPath ?? '/').trim() || '/';
      if (rawPath.length > LIMITS.secretPath || CONTROL_CHARACTER.test(rawPath)) throw invalid(`secretPath must be at most ${LIMITS.secretPath} characters without control characters`);
      const secretPath = /[*?]/.test(rawPath) ? (rawPath.length > 1 ? rawPath.replace(/\/+$/, '') : rawPath) : normaliseSecretPath(rawPath);
      const type = input.type ?? 'general';
      const url = input.webhookUrl.trim();
      if (url.length > LIMITS.url) throw invalid(`webhookUrl must be at most ${LIMITS.url} characters`);
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        throw invalid('webhookUrl must be a URL');
      }
      if (type === 'slack' && !url.includes('hooks.slack.com')) throw invalid('webhookUrl: Incoming Webhook URL is invalid.');
      const refused = await webhookTargetRefusal(target, deps.policy, deps.resolve);
      if (refused) throw invalid(`webhookUrl is refused: ${refused}`);
      const secretKey = (input.webhookSecretKey ?? '').trim();
      if (secretKey.length > LIMITS.secretKey) throw invalid(`webhookSecretKey must be at most ${LIMITS.secretKey} characters`);
      const eventsFilter = checkFilter(input.eventsFilter) ?? [];

      const id = randomUUID();
      const keyId = randomUUID();
      const wrapped = await crypto.generateDataKey(dataKeyAad(keyId));
      const items = [{ plaintext: url, aad: webhookAad(id, 'url') }];
      if (secretKey) items.push({ plaintext: secretKey, aad: webhookAad(id, 'key') });
      const [urlBlob, keyBlob] = await crypto.sealMany(wrapped, dataKeyAad(keyId), items);
      return grant.run(async ({ s, audit }) => {
        await s.keys.insert({ id: keyId, purpose: 'webhook', rootKeyVersion: crypto.rootKeyVersion, wrapped });
        const row = await s.webhooks.insert(
          { id, projectId: grant.project.id, environmentId: env.id, secretPath, type, eventsFilter },
          { dataKeyId: keyId, urlBlob: urlBlob!, keyBlob: keyBlob ?? null },
        );
        await audit({
          eventType: 'create-webhook',
          projectId: grant.project.id,
          environment: env.slug,
          secretPath,
          metadata: { webhookId: id, type, isDisabled: false, signed: secretKey !== '' },
        });
        return row;
      });
    },

    /** The project's webhooks with their URLs (the caller administers the project). */
    async list(actor: Actor, projectId: string, filter: { environment?: string; secretPath?: string } = {}): Promise<WebhookView[]> {
      const grant = await changes.inProject(actor, { id: projectId }, 'project:admin');
      const rows = await store.webhooks.ofProject(grant.project.id, filter);
      return Promise.all(rows.map(async (r) => ({ ...r, url: (await open(r.id))?.url ?? '' })));
    },

    async update(actor: Actor, id: string, change: { isDisabled?: boolean; eventsFilter?: WebhookEventName[] }, origin?: Origin): Promise<WebhookView> {
      if (change.isDisabled === undefined && change.eventsFilter === undefined) throw invalid('At least one field is required: isDisabled or eventsFilter');
      const { row, grant } = await granted(actor, id, origin);
      const eventsFilter = checkFilter(change.eventsFilter);
      return grant.run(async ({ s, audit }) => {
        const cur = await s.webhooks.byId(row.id, { forUpdate: true });
        if (!cur) throw notFound(id);
        const next = (await s.webhooks.update(row.id, { isDisabled: change.isDisabled, eventsFilter }))!;
        await audit({
          eventType: 'update-webhook',
          projectId: next.projectId,
          environment: next.environmentSlug,
          secretPath: next.secretPath,
          metadata: { webhookId: next.id, isDisabled: next.isDisabled, eventsFilter: next.eventsFilter.join(','), resumed: cur.deadAt !== null && next.deadAt === null },
        });
        return next;
      });
    },

    async remove(actor: Actor, id: string, origin?: Origin): Promise<WebhookView> {
      const { row, grant } = await granted(actor, id, origin);
      return grant.run(async ({ s, audit }) => {
        const cur = await s.webhooks.byId(row.id, { forUpdate: true });
        if (!cur) throw notFound(id);
        await s.webhooks.remove(row.id);
        await audit({ eventType: 'delete-webhook', projectId: cur.projectId, environment: cur.environmentSlug, secretPath: cur.secretPath, metadata: { webhookId: cur.id } });
        return cur;
      });
    },

    /**
     * Sends Infisical's test event now (its outcome is the answer's lastStatus and
     * lastRunErrorMessage, as Infisical records it); the delivery itself is not retried.
     */
    async test(actor: Actor, id: string, origin?: Origin): Promise<WebhookView> {
      const { row, grant } = await granted(actor, id, origin);
      const opened = await open(row.id);
      if (!opened) throw notFound(id);
      const payload = webhookPayload(row.type, 'test', {
        projectId: row.projectId,
        projectName: grant.project.name,
        environment: row.environmentSlug,
        environmentName: row.environmentName,
        secretPath: row.secretPath,
      });
      const signed = signedBody(payload, opened.secretKey, Date.now());
      const outcome = await sendWebhook(opened.url, signed.body, signed.headers, { policy: deps.policy, timeoutMs: deps.timeoutMs });
      return grant.run(async ({ s, audit }) => {
        const next = await s.webhooks.recordTest(row.id, { ok: outcome.ok, error: outcome.ok ? null : outcome.error, httpStatus: outcome.status });
        if (!next) throw notFound(id);
        await audit({
          eventType: 'test-webhook',
          projectId: next.projectId,
          environment: next.environmentSlug,
          secretPath: next.secretPath,
          metadata: { webhookId: next.id, ok: outcome.ok, httpStatus: outcome.status },
        });
        return next;
      });
    },
  };
}
export type WebhooksDomain = ReturnType<typeof webhooksDomain>;
