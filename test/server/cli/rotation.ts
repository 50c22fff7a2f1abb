// What the rotate-key tests share: a fixture with secrets in three projects, and
// checks that a key opens (everything reads back) or is refused at start.
import { randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { WrongEncryptionKeyError } from '../../../server/domain/keyring.js';
import { seedHomelab, type Seeded } from '../../helpers/service.js';
import { cliEnv, openServices, readAll, runCli, type Backend, type StoredSecret } from './helpers.js';

export const newKey = () => randomBytes(16).toString('hex');

export interface Fixture {
  env: Record<string, string>;
  before: Map<string, StoredSecret>;
  seeded: Seeded;
}

/** homelab (14 secrets, homelab-eso), a second project with a folder, a comment and a history, and an empty one. */
export async function fixture(t: Test, backend: Backend): Promise<Fixture> {
  const env = await cliEnv(t, backend);
  const services = await openServices(t, env);
  const seeded = await seedHomelab(services);
  await services.projects.create(SYSTEM, { name: 'other' });
  await services.folders.create(SYSTEM, { project: { slug: 'other' }, environment: 'dev', name: 'app' });
  const ref = { project: { slug: 'other' }, environment: 'dev', secretPath: '/app' };
  await services.secrets.create(SYSTEM, { ...ref, key: 'DB_URL', value: 'postgres://a:b@db/app ✓', comment: 'with a comment' });
  await services.secrets.update(SYSTEM, { ...ref, key: 'DB_URL', value: 'postgres://a:c@db/app ✓' });
  await services.projects.create(SYSTEM, { name: 'empty' });
  const before = await readAll(services);
  await services.close();
  t.equal(before.size, 15, 'fixture: 15 secrets');
  return { env, before, seeded };
}

export async function assertOpensWith(t: Test, f: Fixture, key: string, what: string) {
  const services = await openServices(t, { ...f.env, ENCRYPTION_KEY: key });
  t.same(await readAll(services), f.before, `${what}: every secret reads back identical`);
  const login = await services.machineAuth.login({ clientId: f.seeded.clientId, clientSecret: f.seeded.clientSecret });
  t.type(login.accessToken, 'string', `${what}: the machine identity still logs in`);
  await services.close();
}

export async function assertRefused(t: Test, f: Fixture, key: string, what: string) {
  const err = await openServices(t, { ...f.env, ENCRYPTION_KEY: key }).then(
    (s) => s.close().then(() => null),
    (e: unknown) => e,
  );
  t.ok(err instanceof WrongEncryptionKeyError, `${what} is refused at start (the canary)`);
  t.match((err as Error | null)?.message, /ENCRYPTION_KEY does not match the key this database was encrypted with/);
}

export const rotate = (f: Fixture, next: string, extra: Record<string, string> = {}, args: string[] = []) =>
  runCli(['rotate-key', ...args], { ...f.env, NEW_ENCRYPTION_KEY: next, ...extra });

