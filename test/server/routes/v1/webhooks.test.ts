// Webhooks (issue 30 point 4), wire-compatible with Infisical's: the routes of
// backend/src/server/routes/v1/webhook-router.ts (fields, answers {webhook}/{webhooks}),
// the body and signature of backend/src/services/webhook/webhook-fns.ts
// (triggerWebhookRequest: x-infisical-signature `t=<ms>;<hex HMAC-SHA256 of
// JSON.stringify({...payload, timestamp})>`, getWebhookPayload's general shape), the
// service rules of webhook-service.ts (the list answers the URL, nothing answers the key).
// Beyond Infisical: delivery from the event table with retries, dead, resume, collapse, an
// event id header, the SSRF guard at create and at delivery. Real receivers on free
// ports; every wait is on a receiver's request or a recorded delivery outcome.
import postgres from 'postgres';
import t from 'tap';
import { CryptoError } from '../../../../crypto/index.js';
import { startService } from '../../../../server/app.js';
import { parseConfig } from '../../../../server/config.js';
import type { DeliveryOutcome } from '../../../../server/domain/webhookWorker.js';
import { signupAdmin } from '../../../helpers/admin.js';
import { request } from '../../../helpers/http.js';
import { BACKENDS, quietLog, startTestService, testEnv, type TestService } from '../../../helpers/service.js';
import { Receiver, verifiesAsInfisical } from '../../../helpers/webhookReceiver.js';

const KEY = 'whsec-a-test-signing-key';
const VALUE = 'a-value-never-sent-anywhere';
const FAST = { WEBHOOK_RETRY_BASE_MS: '20', WEBHOOK_RETRY_MAX_MS: '80', WEBHOOK_POLL_MS: '50', WEBHOOK_TIMEOUT_MS: '3000' };

/** Outcomes of one webhook's deliveries as the worker records them; `until` resolves on the first that holds. */
function outcomes(svc: TestService, webhookId: () => string) {
  const seen: DeliveryOutcome[] = [];
  const waiters: Array<{ test: (o: DeliveryOutcome) => boolean; resolve: (o: DeliveryOutcome) => void }> = [];
  const stop = svc.services.webhookWorker.watch((o) => {
    if (o.webhookId !== webhookId()) return;
    seen.push(o);
    for (const w of waiters.filter((x) => x.test(o))) w.resolve(o);
  });
  return {
    seen,
    stop,
    until(test: (o: DeliveryOutcome) => boolean): Promise<DeliveryOutcome> {
      return new Promise((resolve) => waiters.push({ test, resolve }));
    },
  };
}

async function setup(svc: TestService) {
  const admin = await signupAdmin(svc.url);
  const project = (await request(`${svc.url}/api/v1/projects`, { method: 'POST', token: admin.token, json: { projectName: 'homelab' } })).body.project;
  const write = (key: string, value = VALUE, secretPath = '/') =>
    request(`${svc.url}/api/v3/secrets/raw/${key}`, { method: 'POST', token: admin.token, json: { projectSlug: 'homelab', environment: 'prod', secretPath, secretValue: value } });
  const create = (json: Record<string, unknown>) => request(`${svc.url}/api/v1/webhooks`, { method: 'POST', token: admin.token, json: { projectId: project.id, environment: 'prod', ...json } });
  const list = () => request(`${svc.url}/api/v1/webhooks?projectId=${project.id}`, { token: admin.token });
  const patch = (id: string, json: unknown) => request(`${svc.url}/api/v1/webhooks/${id}`, { method: 'PATCH', token: admin.token, json });
  return { admin, projectId: project.id as string, write, create, list, patch };
}

const lastEventId = async (svc: TestService, projectId: string) =>
  Number((await svc.services.store.sql<{ lastId: string }[]>`select last_id from project_event_seq where project_id = ${projectId}`)[0]!.lastId);

for (const backend of BACKENDS) {
  t.test(`delivery on ${backend}: retried until it succeeds, signed as Infisical signs`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { ...FAST, WEBHOOK_ALLOW_PRIVATE_RANGES: 'true', WEBHOOK_RETRY_PERIOD_SECONDS: '3600' }));
    const s = await setup(svc);
    const receiver = await Receiver.start(t, [500, 503, 500]);
    let id = '';
    const o = outcomes(svc, () => id);
    t.teardown(o.stop);

    const created = await s.create({ webhookUrl: receiver.url(), webhookSecretKey: KEY, secretPath: '/**' });
    t.equal(created.status, 200, JSON.stringify(created.body));
    const w = created.body.webhook;
    id = w.id;
    t.equal(created.body.message, 'Successfully created webhook');
    t.match(w, { projectId: s.projectId, secretPath: '/**', type: 'general', isDisabled: false, lastStatus: null, lastRunErrorMessage: null, eventsFilter: [] });
    t.equal(w.environment.slug, 'prod');
    t.equal(w.envId, w.environment.id);
    t.notOk('url' in w, 'create answers no URL (Infisical sanitizes it)');
    t.notOk(JSON.stringify(created.body).includes(KEY), 'the key is never answered');

    // Stored sealed; never in the audit trail.
    const [row] = await svc.services.store.sql<{ urlBlob: Buffer; keyBlob: Buffer }[]>`select url_blob, key_blob from webhooks where id = ${id}`;
    t.notOk(row!.urlBlob.includes(Buffer.from(`127.0.0.1:${receiver.port}`)), 'the URL is not stored in clear');
    t.notOk(row!.keyBlob.includes(Buffer.from(KEY)), 'the key is not stored in clear');
    const trail = JSON.stringify(await svc.services.store.sql`select * from audit_log`);
    t.notOk(trail.includes(String(receiver.port)) || trail.includes(KEY), 'neither the URL nor the key is in the audit trail');
    t.ok(trail.includes('create-webhook'), 'the creation is audited');

    // A change: the receiver fails three times, then takes it.
    const done = o.until((x) => x.outcome === 'success');
    t.equal((await s.write('FIRST')).status, 200);
    const eventId = await lastEventId(svc, s.projectId);
    const fourth = await receiver.nth(3);
    const success = await done;
    t.equal(success.eventId, eventId);
    t.same(o.seen.map((x) => x.outcome), ['retry', 'retry', 'retry', 'success'], 'three retries, then success');
    // Backoff from the configuration: [d/2, d] with d = 20, 40, 80 ms (capped at WEBHOOK_RETRY_MAX_MS).
    o.seen.slice(0, 3).forEach((x, i) => {
      const d = Math.min(80, 20 * 2 ** i);
      t.ok(x.delayMs! >= d / 2 && x.delayMs! <= d, `retry ${i + 1} waits ${x.delayMs} ms, within [${d / 2}, ${d}]`);
    });
    t.equal(receiver.requests.length, 4);
    receiver.requests.forEach((r, i) => {
      t.equal(r.headers['x-vault-event-id'], String(eventId), `attempt ${i + 1} names the event`);
      t.equal(r.headers['x-vault-delivery-attempt'], String(i + 1));
      t.equal(r.headers['content-type'], 'application/json');
      t.ok(verifiesAsInfisical(r, KEY), `attempt ${i + 1}: the signature verifies as Infisical's receivers check it`);
    });
    t.notOk(verifiesAsInfisical(fourth, 'another key'), 'and fails under another key');
    t.same(Object.keys(fourth.json), ['event', 'project', 'timestamp'], "Infisical's general payload");
    t.same(fourth.json.project, {
      workspaceId: s.projectId,
      projectId: s.projectId,
      projectName: 'homelab',
      environment: 'prod',
      environmentName: 'Production',
      secretPath: '/',
      changedBy: s.admin.userId,
      changedByActorType: 'user',
    });
    t.equal(fourth.json.event, 'secrets.modified');
    t.notOk(receiver.requests.some((r) => r.body.includes(VALUE)), 'no value is sent');

    // The state, in the API (the list answers the URL to the project's admin) and in the metrics.
    const listed = await s.list();
    t.equal(listed.status, 200);
    const lw = listed.body.webhooks[0];
    t.equal(lw.url, receiver.url(), 'the list answers the URL, as Infisical does');
    t.match(lw, { lastStatus: 'success', lastRunErrorMessage: null, delivery: { state: 'idle', attempts: 0, lastEventId: eventId, lastHttpStatus: 200, nextAttemptAt: null } });
    t.notOk(JSON.stringify(listed.body).includes(KEY), 'nor the key');
    const metrics = await svc.metrics.registry.metrics();
    t.match(metrics, /vaultstandalone_webhook_deliveries_total\{outcome="retry"\} 3/);
    t.match(metrics, /vaultstandalone_webhook_deliveries_total\{outcome="success"\} 1/);
    t.match(metrics, /vaultstandalone_webhooks\{state="ok"\} 1/);

    // Disabled: nothing is delivered; enabled again, it resumes, and a burst to one folder is one delivery.
    t.equal((await s.patch(id, { isDisabled: true })).body.webhook.delivery.state, 'disabled');
    for (const k of ['A', 'B', 'C']) t.equal((await s.write(k)).status, 200);
    const burstLast = await lastEventId(svc, s.projectId);
    t.equal(receiver.requests.length, 4, 'nothing while disabled');
    const resumed = o.until((x) => x.outcome === 'success' && x.eventId === burstLast);
    const enabled = await s.patch(id, { isDisabled: false });
    t.equal(enabled.status, 200);
    t.equal(enabled.body.message, 'Successfully updated webhook');
    await resumed;
    t.equal(receiver.requests.length, 5, 'three events at one folder: one delivery');
    t.equal(receiver.requests[4]!.headers['x-vault-event-id'], String(burstLast), 'naming the last of them');

    // Scoped: a webhook on /app hears nothing of /, and one filtered to other events hears nothing.
    const other = await Receiver.start(t);
    const scoped = (await s.create({ webhookUrl: other.url('/app'), secretPath: '/app' })).body.webhook;
    const filtered = (await s.create({ webhookUrl: other.url('/filtered'), eventsFilter: [{ eventName: 'secrets.rotation-failed' }] })).body.webhook;
    t.same(filtered.eventsFilter, [{ eventName: 'secrets.rotation-failed' }]);
    const skips = new Set<string>();
    const bothSkipped = new Promise<void>((resolve) => {
      const stop = svc.services.webhookWorker.watch((x) => {
        if (x.outcome === 'skipped' && (x.webhookId === scoped.id || x.webhookId === filtered.id)) skips.add(x.webhookId);
        if (skips.size === 2) {
          stop();
          resolve();
        }
      });
    });
    const heard = o.until((x) => x.outcome === 'success' && x.eventId! > burstLast);
    t.equal((await s.write('D')).status, 200);
    await Promise.all([bothSkipped, heard]);
    t.equal(other.requests.length, 0, 'neither the /app webhook nor the filtered one was called');
    const unsigned = await request(`${svc.url}/api/v1/webhooks/${scoped.id}/test`, { method: 'POST', token: s.admin.token });
    t.equal(unsigned.status, 200);
    t.equal(unsigned.body.webhook.lastStatus, 'success');
    const testEvent = other.requests[0]!;
    t.equal(testEvent.json.event, 'test', "Infisical's test event");
    t.same(Object.keys(testEvent.json.project).sort(), ['environment', 'environmentName', 'projectId', 'projectName', 'secretPath', 'workspaceId']);
    t.equal(testEvent.json.project.secretPath, '/app');
    t.notOk('x-infisical-signature' in testEvent.headers, 'no key: no signature header (as Infisical)');

    // Deleted: gone, its data key with it.
    const keyId = (await svc.services.store.sql<{ dataKeyId: string }[]>`select data_key_id from webhooks where id = ${scoped.id}`)[0]!.dataKeyId;
    const deleted = await request(`${svc.url}/api/v1/webhooks/${scoped.id}`, { method: 'DELETE', token: s.admin.token });
    t.equal(deleted.status, 200);
    t.equal(deleted.body.webhook.id, scoped.id);
    t.equal((await svc.services.store.sql`select 1 from crypto_keys where id = ${keyId}`).length, 0, 'its data key is deleted');
    t.equal((await s.list()).body.webhooks.length, 2);
  });

  t.test(`dead on ${backend}: failing past the period, parked, resumed when enabled again`, async (t) => {
    const svc = await startTestService(t, await testEnv(t, backend, { ...FAST, WEBHOOK_ALLOW_PRIVATE_RANGES: 'true', WEBHOOK_RETRY_PERIOD_SECONDS: '1' }));
    const s = await setup(svc);
    const receiver = await Receiver.start(t, [], 500);
    let id = '';
    const o = outcomes(svc, () => id);
    t.teardown(o.stop);
    id = (await s.create({ webhookUrl: receiver.url(), webhookSecretKey: KEY })).body.webhook.id;
    const dead = o.until((x) => x.outcome === 'dead');
    t.equal((await s.write('K')).status, 200);
    const eventId = await lastEventId(svc, s.projectId);
    const d = await dead;
    t.ok(d.attempts! >= 2, `dead after ${d.attempts} attempts`);
    t.ok(o.seen.slice(0, -1).every((x) => x.outcome === 'retry'), 'retried until then');
    const seenBefore = receiver.requests.length;
    t.equal(seenBefore, d.attempts);
    const w = (await s.list()).body.webhooks[0];
    t.match(w, { isDisabled: false, lastStatus: 'failed', lastRunErrorMessage: 'HTTP 500', delivery: { state: 'dead', pendingEventId: eventId, nextAttemptAt: null, lastHttpStatus: 500 } });
    t.ok(w.delivery.deadAt, 'deadAt is set');
    t.match(await svc.metrics.registry.metrics(), /vaultstandalone_webhook_deliveries_total\{outcome="dead"\} 1/);
    t.match(await svc.metrics.registry.metrics(), /vaultstandalone_webhooks\{state="dead"\} 1/);

    // Parked: a later change is not delivered (nothing overtakes the dead event).
    const laterDone = await s.write('L');
    t.equal(laterDone.status, 200);
    svc.services.webhookWorker.kick();
    // Enabled again: it resumes from the dead event, and covers the later one with it.
    receiver.then = 200;
    const back = o.until((x) => x.outcome === 'success');
    const resumed = await s.patch(id, { isDisabled: false });
    t.equal(resumed.body.webhook.delivery.state, 'idle', 'enabling clears the dead state');
    const ok = await back;
    t.equal(receiver.requests.length, seenBefore + 1, 'one delivery after resuming');
    t.equal(ok.eventId, eventId + 1, 'covering the dead event and the later one (same folder)');
    t.ok(verifiesAsInfisical(receiver.requests.at(-1)!, KEY));
  });
}

t.test('SSRF: refused at create with private ranges off, and again at delivery', async (t) => {
  // Retries minutes apart: the refused delivery below is tried once while the test looks.
  const env = await testEnv(t, 'postgres+redis', { ...FAST, WEBHOOK_RETRY_BASE_MS: '60000', WEBHOOK_RETRY_MAX_MS: '60000' });
  const svc = await startTestService(t, env);
  const s = await setup(svc);
  for (const url of [
    'http://127.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]:8080/hook',
    'http://10.1.2.3/hook',
    'http://0x7f000001/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://192.168.1.10/hook',
    'http://localhost:9/hook',
    'http://metadata.google.internal/computeMetadata/v1/',
    'file:///etc/passwd',
  ]) {
    const r = await s.create({ webhookUrl: url });
    t.equal(r.status, 422, `${url}: 422`);
    t.match(r.body.message, /webhookUrl/, 'naming the field');
  }
  t.equal((await svc.services.store.sql`select 1 from webhooks`).length, 0, 'nothing written');
  t.equal((await s.create({ webhookUrl: 'not a url' })).status, 422);
  t.equal((await s.create({ webhookUrl: 'https://hooks.example/x', environment: 'nowhere' })).status, 404, 'unknown environment');
  t.equal((await s.create({ webhookUrl: 'https://hooks.example/x', eventsFilter: [{ eventName: 'secrets.exploded' }] })).status, 422);
  t.equal((await s.patch('00000000-0000-4000-8000-000000000000', {})).status, 422, 'PATCH needs a field');

  // Private ranges allowed (another replica's setting, or a setting since changed): the
  // webhook to 127.0.0.1 exists; a replica with the setting off refuses to deliver to it.
  const receiver = await Receiver.start(t);
  const allowing = await startService(parseConfig({ ...env, WEBHOOK_ALLOW_PRIVATE_RANGES: 'true', WEBHOOK_POLL_MS: '600000' }), quietLog);
  t.teardown(() => allowing.close());
  const made = await request(`http://127.0.0.1:${allowing.port}/api/v1/webhooks`, { method: 'POST', token: s.admin.token, json: { projectId: s.projectId, environment: 'prod', webhookUrl: receiver.url() } });
  t.equal(made.status, 200);
  await allowing.close();
  const o = outcomes(svc, () => made.body.webhook.id);
  t.teardown(o.stop);
  const refused = o.until((x) => x.outcome === 'retry');
  t.equal((await s.write('K')).status, 200);
  await refused;
  t.equal(receiver.requests.length, 0, 'nothing was sent');
  const w = (await s.list()).body.webhooks[0];
  t.match(w.lastRunErrorMessage, /^refused: 127\.0\.0\.1 is a loopback address/);
  t.equal(w.delivery.state, 'retrying');

  // An origin the operator lists is allowed (and only that one).
  const listing = await startTestService(t, { ...env, WEBHOOK_ALLOWED_ORIGINS: `http://127.0.0.1:${receiver.port}`, WEBHOOK_POLL_MS: '600000' });
  const ok = await request(`${listing.url}/api/v1/webhooks`, { method: 'POST', token: s.admin.token, json: { projectId: s.projectId, environment: 'prod', webhookUrl: receiver.url('/listed') } });
  t.equal(ok.status, 200, 'a listed origin');
  const no = await request(`${listing.url}/api/v1/webhooks`, { method: 'POST', token: s.admin.token, json: { projectId: s.projectId, environment: 'prod', webhookUrl: `http://127.0.0.1:${receiver.port + 1}/x` } });
  t.equal(no.status, 422, 'another port of the same host is not');
});

t.test('who may: project admins (people); 404 alike for missing and not visible; faults are 503', async (t) => {
  // No poll: the only queries on the webhooks table are the requests' (the fault below).
  const env = await testEnv(t, 'postgres+redis', { ...FAST, WEBHOOK_ALLOW_PRIVATE_RANGES: 'true', WEBHOOK_POLL_MS: '600000' });
  const svc = await startTestService(t, env);
  const s = await setup(svc);
  const receiver = await Receiver.start(t);
  const id = (await s.create({ webhookUrl: receiver.url() })).body.webhook.id as string;
  const email = 'pat@example.test';
  const password = 'a person passphrase 123';
  t.equal((await request(`${svc.url}/api/v1/users`, { method: 'POST', token: s.admin.token, json: { email, password, firstName: 'Pat' } })).status, 200);
  const pat = (await request(`${svc.url}/api/v3/auth/login`, { method: 'POST', json: { email, password } })).body.token as string;
  const missing = '00000000-0000-4000-8000-000000000000';
  for (const [method, suffix, json] of [['PATCH', '', { isDisabled: true }], ['DELETE', '', undefined], ['POST', '/test', undefined]] as const) {
    const theirs = await request(`${svc.url}/api/v1/webhooks/${id}${suffix}`, { method, token: pat, json });
    const none = await request(`${svc.url}/api/v1/webhooks/${missing}${suffix}`, { method, token: s.admin.token, json });
    t.equal(theirs.status, 404, `${method}${suffix} by a non-member: 404`);
    t.equal(none.status, 404, `${method}${suffix} of a missing webhook: 404`);
    t.equal(theirs.body.message, `Webhook with ID '${id}' not found`, 'the same sentence, naming only what was sent');
  }
  t.equal((await request(`${svc.url}/api/v1/webhooks?projectId=${s.projectId}`, { token: pat })).status, 404, 'list by a non-member: 404');
  t.equal((await request(`${svc.url}/api/v1/webhooks`, { method: 'POST', token: pat, json: { projectId: s.projectId, environment: 'prod', webhookUrl: receiver.url() } })).status, 404);
  t.equal((await svc.services.store.sql`select 1 from webhooks where is_disabled`).length, 0, 'nothing changed');

  // A fault is a 503, with nothing written.
  const crypto = svc.services.crypto;
  const sealMany = crypto.sealMany.bind(crypto);
  crypto.sealMany = () => Promise.reject(new CryptoError('KEY_UNAVAILABLE'));
  t.teardown(() => {
    crypto.sealMany = sealMany;
  });
  const down = await s.create({ webhookUrl: receiver.url('/2') });
  t.equal(down.status, 503, 'crypto unavailable: 503');
  crypto.sealMany = sealMany;
  t.equal((await svc.services.store.sql`select 1 from webhooks`).length, 1, 'nothing written');

  // The database fails under the list (its connection killed while the query waits): 503, never an empty list.
  const admin = postgres(env.DATABASE_URL!, { max: 1, onnotice: () => {} });
  t.teardown(() => admin.end());
  let listed: ReturnType<typeof s.list> | undefined;
  await admin.begin(async (tx) => {
    await tx`lock table webhooks in access exclusive mode`;
    listed = s.list();
    let pids: number[] = [];
    for (let i = 0; i < 500 && pids.length === 0; i++) {
      pids = (await tx<{ pid: number }[]>`select pid from pg_stat_activity where datname = current_database()
        and application_name = 'vault-standalone' and wait_event_type = 'Lock'`).map((r) => r.pid);
    }
    t.ok(pids.length >= 1, "the list's query waits on the database");
    await tx`select pg_terminate_backend(pid) from unnest(${tx.array(pids)}::int[]) as pid`;
  });
  const failed = await listed!;
  t.equal(failed.status, 503, 'database fault: 503');
  t.equal(failed.body.error, 'ServiceUnavailable');
  t.equal((await s.list()).body.webhooks.length, 1, 'the next request reconnects');
});
