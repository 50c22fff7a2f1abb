// The Webhooks tab in a real browser: an admin adds a webhook, sees its delivery fail and
// wait for its next try, disables it, enables it again (the receiver now takes it: idle),
// and deletes it. Waits are on the page and on the receiver's requests.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { seedHomelab, startTestService, testEnv } from '../helpers/service.js';
import { Receiver } from '../helpers/webhookReceiver.js';
import { browserTest, loginThroughUi, newPage, shot, signupOverApi } from './helpers.js';

browserTest(t, 'Webhooks: add, see a failed delivery waiting, disable, enable (resumes), delete', async (t) => {
  // The first retry waits minutes: the failed delivery stays "retrying" while the test looks.
  const svc = await startTestService(t, await testEnv(t, 'embedded', { WEBHOOK_ALLOW_PRIVATE_RANGES: 'true', WEBHOOK_RETRY_BASE_MS: '600000', WEBHOOK_POLL_MS: '100' }));
  await signupOverApi(svc.url);
  const seeded = await seedHomelab(svc.services);
  const P = seeded.projectId;
  const receiver = await Receiver.start(t, [], 500);

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${P}/webhooks`);
  await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
  await page.getByText('No webhook yet').waitFor();

  await page.getByLabel('Environment', { exact: true }).selectOption('prod');
  await page.getByLabel('URL', { exact: true }).fill(receiver.url());
  await page.getByLabel('Signing key', { exact: true }).fill('a signing key');
  await page.getByRole('button', { name: 'Add webhook' }).click();
  const row = page.getByRole('row').filter({ hasText: receiver.url() });
  await row.getByText('idle').waitFor();
  t.pass('listed, idle');

  // The worker records each outcome, then tells its watchers: the page is refreshed after that.
  const recorded = (kind: string) =>
    new Promise<void>((resolve) => {
      const stop = svc.services.webhookWorker.watch((o) => {
        if (o.outcome !== kind) return;
        stop();
        resolve();
      });
    });
  const failed = recorded('retry');
  await svc.services.secrets.create(SYSTEM, { project: { id: P }, environment: 'prod', secretPath: '/', key: 'NEW_KEY', value: 'v' });
  await failed;
  await page.getByRole('button', { name: 'Refresh' }).click();
  await row.getByText('retrying').waitFor();
  await row.getByText('1 failed, next try').waitFor();
  await row.getByText('HTTP 500').waitFor();
  await shot(page, '70-webhooks-retrying');

  await row.getByRole('button', { name: 'Disable' }).click();
  await row.getByText('disabled').waitFor();
  receiver.then = 200;
  const delivered = recorded('success');
  await row.getByRole('button', { name: 'Enable' }).click();
  // Enabled: the pending delivery is tried again at once, and taken.
  const second = await receiver.nth(1);
  t.equal(second.headers['x-vault-delivery-attempt'], '2');
  await delivered;
  await page.getByRole('button', { name: 'Refresh' }).click();
  await row.getByText('idle').waitFor();
  t.pass('delivered after enabling: idle');

  await row.getByRole('button', { name: `Delete the webhook to ${receiver.url()}` }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete webhook' }).click();
  await page.getByText('No webhook yet').waitFor();
  t.pass('deleted');
});
