// The operator's conveniences (issue 33 point 6), through the real command line as a
// child process: --version, the exit codes in backup/restore help, a command's output
// without the service's start-up chatter, and setup-code (the first visit's code the
// service derives from AUTH_SECRET when SETUP_TOKEN is unset).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { setupCodeFrom } from '../../../server/auth/tokens.js';
import { SYSTEM } from '../../../server/domain/access.js';
import { testKeys } from '../../helpers/service.js';
import { cliEnv, openServices, REPO, runCli, tempDir } from './helpers.js';

t.test('--version prints the package version and exits 0', async (t) => {
  const version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
  for (const flag of ['--version', '-V']) {
    const r = await runCli([flag], {});
    t.equal(r.code, 0, `${flag}: exit 0`);
    t.equal(r.stdout, `vault-standalone ${version} (node ${process.version})\n`, `${flag}: one line on stdout`);
    t.equal(r.stderr, '');
  }
  const help = await runCli(['--help'], {});
  t.match(help.stdout, /vault-standalone --version/, 'the usage names it');
});

t.test('backup and restore --help document their exit codes', async (t) => {
  for (const cmd of ['backup', 'restore']) {
    const r = await runCli([cmd, '--help'], {});
    t.equal(r.code, 0);
    t.match(r.stdout, /Exit codes: 0 [^;]+; 1 failure[^;]+; 2 usage error/, `${cmd}: 0, 1 and 2 explained`);
  }
  // And they are the codes the commands answer with.
  const dir = tempDir(t);
  t.equal((await runCli(['backup'], { DATA_DIR: dir })).code, 2, 'no --out: usage error, 2');
  t.equal((await runCli(['backup', '--out', join(dir, 'b.gz')], { DATA_DIR: dir })).code, 1, 'no database there: failure, 1');
  t.equal((await runCli(['restore', '--in', join(dir, 'missing.gz')], { DATA_DIR: join(dir, 'new') })).code, 1, 'unreadable file: 1');
});

t.test("a command's output carries no start-up chatter of the service", async (t) => {
  const env = await cliEnv(t, 'postgres');
  const services = await openServices(t, env);
  await services.projects.create(SYSTEM, { name: 'homelab' });
  await services.close();
  const r = await runCli(['seed-inventory', '--file', join(REPO, 'docs/homelab-inventory.json')], env);
  t.equal(r.code, 0, 'seeded', { stderr: r.stderr });
  t.match(r.stdout, /14 keys in homelab\/prod\/: 6 created/, 'the result on stdout');
  for (const chatter of [/migrations|schema up to date/, /audit head|audit-head/i, /change committed/, /first visit/]) {
    t.notMatch(r.stderr, chatter, `no ${chatter} line`);
  }
});

t.test('setup-code prints the code the service asks for; 1 without AUTH_SECRET', async (t) => {
  const keys = testKeys();
  const r = await runCli(['setup-code'], { NODE_ENV: 'production', ...keys });
  t.equal(r.code, 0, { stderr: r.stderr });
  t.equal(r.stdout, `${setupCodeFrom(Buffer.from(keys.AUTH_SECRET, 'base64'))}\n`, 'the derived code, alone on stdout');
  t.equal((await runCli(['setup-code'], { NODE_ENV: 'production', ...keys })).stdout, r.stdout, 'the same every time');
  const other = await runCli(['setup-code'], { NODE_ENV: 'production', ...testKeys() });
  t.not(other.stdout, r.stdout, 'another AUTH_SECRET, another code');

  const none = await runCli(['setup-code'], { NODE_ENV: 'production', DATA_DIR: tempDir(t) });
  t.equal(none.code, 1);
  t.match(none.stderr, /AUTH_SECRET is not set/);
  t.equal(none.stdout, '');
  const bad = await runCli(['setup-code'], { NODE_ENV: 'production', AUTH_SECRET: 'short' });
  t.equal(bad.code, 1);
  t.equal((await runCli(['setup-code', '--extra'], keys)).code, 2, 'unknown option: 2');
  const note = await runCli(['setup-code'], { NODE_ENV: 'production', ...keys, SETUP_TOKEN: 'an-explicit-setup-token-value' });
  t.match(note.stderr, /SETUP_TOKEN is set/, 'says when SETUP_TOKEN overrides it');
  t.notMatch(note.stderr, /an-explicit-setup-token-value/, 'without echoing it');
});
