// The rules of webhook delivery alone: Infisical's payload and signature bytes
// (backend/src/services/webhook/webhook-fns.ts getWebhookPayload, triggerWebhookRequest),
// path matching as its picomatch, what one delivery covers (collapse, order, skips), the
// backoff, and the SSRF rules for webhook targets (server/domain/fetchGuard.ts) with a
// resolver the test controls (a name that resolves somewhere else at delivery time).
import { createHmac } from 'node:crypto';
import t from 'tap';
import type { EventRow } from '../../../storage/events.js';
import { FetchRefused, isPrivateAddress, webhookAddressRefusal, webhookLookup, webhookTargetRefusal, webhookUrlRefusal } from '../../../server/domain/fetchGuard.js';
import { backoffMs, planDelivery } from '../../../server/domain/webhookWorker.js';
import { signedBody, webhookPathMatches, webhookPayload } from '../../../server/domain/webhooks.js';

const facts = { projectId: 'p1', projectName: 'homelab', environment: 'prod', environmentName: 'Production', secretPath: '/app', changedBy: 'u1', changedByActorType: 'user' };

t.test("Infisical's general payload and signature bytes", async (t) => {
  const payload = webhookPayload('general', 'secrets.modified', facts);
  const { body, headers } = signedBody(payload, 'key', 1_700_000_000_123);
  t.equal(
    body,
    '{"event":"secrets.modified","project":{"workspaceId":"p1","projectId":"p1","projectName":"homelab","environment":"prod","environmentName":"Production","secretPath":"/app","changedBy":"u1","changedByActorType":"user"},"timestamp":1700000000123}',
    'JSON.stringify({...payload, timestamp}) in Infisical\'s key order',
  );
  t.equal(headers['x-infisical-signature'], `t=1700000000123;${createHmac('sha256', 'key').update(body).digest('hex')}`);
  t.same(signedBody(payload, '', 1).headers, {}, 'no key, no signature header');
  const test = webhookPayload('general', 'test', facts);
  t.same(test, { event: 'test', project: { workspaceId: 'p1', projectId: 'p1', projectName: 'homelab', environment: 'prod', environmentName: 'Production', secretPath: '/app' } });
  t.match(webhookPayload('slack', 'secrets.modified', facts), { text: 'A secret value has been added or modified.' });
  t.match(webhookPayload('microsoft-teams', 'secrets.modified', facts), { type: 'message' });
});

t.test('paths match as Infisical\'s picomatch', async (t) => {
  t.ok(webhookPathMatches('/', '/'));
  t.notOk(webhookPathMatches('/app', '/'), 'a plain path is that folder only');
  t.ok(webhookPathMatches('/app/db', '/app/**'));
  t.ok(webhookPathMatches('/app', '/app/**'), '`/x/**` also matches `/x`');
  t.ok(webhookPathMatches('/', '/**'));
  t.notOk(webhookPathMatches('/apps', '/app/**'));
  t.ok(webhookPathMatches('/a1', '/a?'));
});

const ev = (id: number, secretPath = '/', environment = 'prod'): EventRow => ({
  projectId: 'p1',
  id,
  type: 'secret:update',
  environment,
  secretPath,
  secretKeys: ['K'],
  actorType: 'user',
  actorId: 'u1',
  createdAt: new Date(0),
});
const hook = { environmentSlug: 'prod', secretPath: '/**', eventsFilter: [] as string[] };

t.test('what one delivery covers', async (t) => {
  t.same(planDelivery(hook, [], 7), { kind: 'skip', cursor: 7 }, 'nothing kept after the cursor: move to the last id');
  t.same(planDelivery(hook, [ev(1, '/', 'dev'), ev(2, '/', 'dev')], 2), { kind: 'skip', cursor: 2 }, 'another environment: skipped');
  t.same(planDelivery({ ...hook, eventsFilter: ['secrets.rotation-failed'] }, [ev(1)], 1), { kind: 'skip', cursor: 1 }, 'filtered out');
  const burst = planDelivery(hook, [ev(1), ev(2, '/', 'dev'), ev(3), ev(4)], 4);
  t.match(burst, { kind: 'deliver', firstEventId: 1, eventId: 4, cursor: 4, secretPath: '/' }, 'a burst to one folder is one delivery (others skipped within it)');
  const split = planDelivery(hook, [ev(1), ev(2), ev(3, '/app'), ev(4)], 4);
  t.match(split, { kind: 'deliver', firstEventId: 1, eventId: 2, cursor: 2 }, 'stops before the first event it wants elsewhere: in order');
  t.match(planDelivery(hook, [ev(5, '/', 'dev'), ev(6, '/app')], 6), { kind: 'deliver', firstEventId: 6, eventId: 6, cursor: 6, secretPath: '/app' });
  t.match(planDelivery(hook, [ev(1), ev(2)], 9, 2), { kind: 'deliver', eventId: 2, cursor: 2 }, 'a full page covers only what it read');
});

t.test('backoff: exponential, capped, jittered in [d/2, d]', async (t) => {
  const r = { baseMs: 100, maxMs: 1000 };
  t.same([1, 2, 3, 4, 5, 9].map((n) => backoffMs(n, r, () => 1)), [100, 200, 400, 800, 1000, 1000]);
  t.same([1, 2, 3, 4, 5].map((n) => backoffMs(n, r, () => 0)), [50, 100, 200, 400, 500]);
  t.equal(backoffMs(10_000, r, () => 1), 1000, 'no overflow for a large attempt count');
});

t.test('SSRF rules for webhook targets', async (t) => {
  const off = { allowPrivate: false, allowedOrigins: [] as string[] };
  const on = { allowPrivate: true, allowedOrigins: [] as string[] };
  for (const url of ['http://127.0.0.1/', 'http://[::1]/', 'http://0x7f000001/', 'http://10.0.0.1/', 'http://172.16.5.4/', 'http://192.168.0.1/', 'http://100.64.0.1/', 'http://[fd00::1]/', 'http://[::ffff:10.0.0.1]/', 'http://localhost/']) {
    t.ok(webhookUrlRefusal(new URL(url), off), `${url} refused with private ranges off`);
    t.equal(webhookUrlRefusal(new URL(url), on), undefined, `${url} allowed with them on`);
  }
  for (const url of ['http://169.254.169.254/', 'http://[fe80::1]/', 'http://[fd00:ec2::254]/', 'http://0.0.0.0/', 'http://metadata.google.internal/', 'http://[::ffff:169.254.169.254]/', 'gopher://example.com/']) {
    t.ok(webhookUrlRefusal(new URL(url), on), `${url} refused whatever the settings`);
  }
  t.equal(webhookUrlRefusal(new URL('http://127.0.0.1:9000/x'), { allowPrivate: false, allowedOrigins: ['http://127.0.0.1:9000'] }), undefined, 'a listed origin');
  t.ok(webhookUrlRefusal(new URL('http://127.0.0.1:9001/x'), { allowPrivate: false, allowedOrigins: ['http://127.0.0.1:9000'] }), 'only that origin');
  t.notOk(isPrivateAddress('8.8.8.8'));
  t.equal(webhookAddressRefusal('93.184.216.34', false), undefined, 'a public address');

  // A name is checked on what it resolves to: at create, and again at connect time.
  const resolvesTo = (address: string, family = 4) => async () => [{ address, family }];
  t.match(await webhookTargetRefusal(new URL('https://hooks.example/x'), off, resolvesTo('10.0.0.5')), /resolves to 10\.0\.0\.5/);
  t.equal(await webhookTargetRefusal(new URL('https://hooks.example/x'), off, resolvesTo('93.184.216.34')), undefined);
  t.match(await webhookTargetRefusal(new URL('https://nowhere.example/x'), off, () => Promise.reject(new Error('ENOTFOUND'))), /does not resolve/);
  const lookup = webhookLookup(new URL('https://hooks.example/x'), off, resolvesTo('169.254.169.254'));
  const err = await new Promise<Error | null>((resolve) => lookup('hooks.example', {}, (e) => resolve(e)));
  t.ok(err instanceof FetchRefused, 'a name that resolves to the metadata address at delivery is refused at connect time');
  const fine = webhookLookup(new URL('https://hooks.example/x'), off, resolvesTo('93.184.216.34'));
  const got = await new Promise<unknown>((resolve) => fine('hooks.example', {}, (e, address) => resolve(e ?? address)));
  t.equal(got, '93.184.216.34');
});
