// Bulk paste and .env import (issue 32 point 5), in a real browser: a .env with comments,
// quotes and a multi-line value is read as dotenv reads it; a key already in the folder is
// skipped unless Overwrite is ticked for it; a file can be imported; everything in one batch.
import t from 'tap';
import { SYSTEM } from '../../server/domain/access.js';
import { browserTest, homelabService, loginThroughUi, newPage } from './helpers.js';

browserTest(t, 'bulk paste: dotenv parsing, skip or overwrite per key, file import', async (t) => {
  const { svc, seeded } = await homelabService(t);
  const project = { id: seeded.projectId };
  const where = { project, environment: 'dev', secretPath: '/' };
  await svc.services.secrets.create(SYSTEM, { ...where, key: 'KEEP', value: 'kept' });
  await svc.services.secrets.create(SYSTEM, { ...where, key: 'REPLACE', value: 'old' });
  const values = async () => Object.fromEntries((await svc.services.secrets.list(SYSTEM as never, where)).map((x) => [x.key, x.value]));

  const { page } = await newPage(t);
  await loginThroughUi(page, svc.url);
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  await page.goto(`${svc.url}/projects/${seeded.projectId}/secrets?env=dev`);
  await page.getByRole('table', { name: 'Secrets in dev /', exact: true }).waitFor();

  await page.getByRole('button', { name: 'Bulk paste' }).click();
  const dialog = page.getByRole('dialog', { name: 'Bulk paste' });
  const pem = '-----BEGIN KEY-----\nAAAA\n-----END KEY-----';
  await dialog.getByLabel('KEY=value lines').fill(['# app', 'A=1 # comment', `PEM="${pem}"`, "SPACED='  two  '", 'KEEP=new-keep', 'REPLACE=new', ''].join('\n'));
  await dialog.getByText('5 secrets', { exact: true }).waitFor();
  await dialog.getByRole('group', { name: /Already here/ }).waitFor();
  await dialog.getByRole('checkbox', { name: 'Overwrite REPLACE' }).check();
  await dialog.getByRole('button', { name: 'Add 3, overwrite 1' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.same(await values(), { KEEP: 'kept', REPLACE: 'new', A: '1', PEM: pem, SPACED: '  two  ' }, 'comment dropped, quotes kept spaces, KEEP skipped, REPLACE overwritten');

  // A bad line blocks the batch and says which.
  await page.getByRole('button', { name: 'Bulk paste' }).click();
  await dialog.getByLabel('KEY=value lines').fill('GOOD=1\nnot a pair\n');
  await dialog.getByRole('alert').getByText('Line 2: expected KEY=value').waitFor();
  t.equal(await dialog.getByRole('alert').getByRole('listitem').count(), 1, 'the error list keeps list semantics');
  // A file replaces the text.
  await dialog.getByLabel('Or import a .env file').setInputFiles({ name: 'app.env', mimeType: 'text/plain', buffer: Buffer.from('FROM_FILE="x\\ny"\n') });
  await dialog.getByText('Read app.env').waitFor();
  await dialog.getByRole('button', { name: 'Add 1 secret' }).click();
  await dialog.waitFor({ state: 'hidden' });
  t.equal((await values()).FROM_FILE, 'x\ny', 'double-quoted \\n became a line break');
});
