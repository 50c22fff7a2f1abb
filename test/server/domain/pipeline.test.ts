// The write pipeline on its own, with a small fake store and bus: invalidations go out
// only after the commit, a change that invalidates without auditing rolls back, entries
// carry the grant's actor and address. And the rule that keeps it the only way in: in
// server/, only the pipeline opens a transaction or appends to the audit trail.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { SYSTEM } from '../../../server/domain/access.js';
import { topics } from '../../../server/domain/caches.js';
import { UnauditedChangeError, writePipeline } from '../../../server/domain/pipeline.js';
import { AppError } from '../../../server/errors.js';
import type { AuditEvent } from '../../../storage/audit.js';
import type { Store, TxStores } from '../../../storage/index.js';

function fakes() {
  const log: string[] = [];
  const appended: AuditEvent[] = [];
  const store: Pick<Store, 'transaction'> = {
    async transaction<T>(fn: (s: TxStores) => Promise<T>): Promise<T> {
      log.push('begin');
      const s = { tx: {}, audit: { appendMany: async (_tx: unknown, es: AuditEvent[]) => void appended.push(...es) } } as unknown as TxStores;
      try {
        const out = await fn(s);
        log.push('commit');
        return out;
      } catch (err) {
        log.push('rollback');
        throw err;
      }
    },
  };
  const bus = { publish: async (topic: string, key: string) => void log.push(`publish ${topic} ${key}`) };
  const project = { id: 'p1', slug: 'p' };
  const access = {
    authorize: async (_actor: unknown, ref: { slug?: string }) => {
      if (ref.slug !== 'p') throw new AppError('NOT_FOUND', 'no such project');
      return { project, role: 'admin' as const };
    },
  };
  return { log, appended, changes: writePipeline({ store, bus, access: access as never }) };
}

t.test('invalidations are published after the commit, once each, in order', async (t) => {
  const { log, appended, changes } = fakes();
  const grant = await changes.inProject({ kind: 'user', userId: 'u1' }, { slug: 'p' }, 'secrets:write', { ip: '10.0.0.1' });
  const out = await grant.run(async ({ audit, invalidate }) => {
    invalidate(topics.environment, 'e1');
    await audit({ eventType: 'create-secret', projectId: grant.project.id });
    invalidate(topics.environment, 'e1');
    invalidate(topics.project, 'p1');
    log.push('body done');
    return 42;
  });
  t.equal(out, 42);
  t.same(log, ['begin', 'body done', 'commit', 'publish environment e1', 'publish project p1']);
  t.match(appended, [{ eventType: 'create-secret', actorType: 'user', actorId: 'u1', ip: '10.0.0.1' }]);
});

t.test('a failed change publishes nothing', async (t) => {
  const { log, changes } = fakes();
  const grant = changes.inOrganization(SYSTEM);
  await t.rejects(
    grant.run(async ({ audit, invalidate }) => {
      await audit({ eventType: 'delete-identity' });
      invalidate(topics.identity, 'i1');
      throw new AppError('CONFLICT', 'no');
    }),
    { code: 'CONFLICT' },
  );
  t.same(log, ['begin', 'rollback']);
});

t.test('a change that invalidates caches without an audit entry rolls back', async (t) => {
  const { log, changes } = fakes();
  await t.rejects(
    changes.byCaller({ actorType: 'identity', actorId: 'i1' }).run(async ({ invalidate }) => invalidate(topics.accessToken, 't1')),
    UnauditedChangeError,
  );
  t.same(log, ['begin', 'rollback']);
});

t.test('the grant decides before any transaction: 404 and 403 open none', async (t) => {
  const { log, changes } = fakes();
  await t.rejects(changes.inProject({ kind: 'user', userId: 'u1' }, { slug: 'nope' }, 'secrets:write'), { code: 'NOT_FOUND' });
  t.throws(() => changes.inOrganization({ kind: 'identity', identityId: 'i1' }), { code: 'FORBIDDEN' });
  t.same(log, []);
});

t.test('actAs names the account a change created in the entries after it', async (t) => {
  const { appended, changes } = fakes();
  await changes.byCaller({ actorType: 'user', actorId: null }).run(async ({ audit, actAs }) => {
    actAs({ actorType: 'user', actorId: 'new-user' });
    await audit({ eventType: 'admin-signup' });
  });
  t.match(appended, [{ eventType: 'admin-signup', actorType: 'user', actorId: 'new-user' }]);
});

t.test('in server/, only the pipeline opens transactions and appends to the audit trail', async (t) => {
  const root = fileURLToPath(new URL('../../../../', import.meta.url));
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) files.push(relative(root, path));
    }
  };
  walk(join(root, 'server'));
  t.ok(files.length > 20, 'the sources are found');
  // Start-up key bootstrap (the canary, the audit key and the chain's first anchor: no
  // actor, nothing to invalidate), the offline key rotation and the online rekey (its own
  // small transactions, each audited, publishing its invalidations) have their own transactions.
  const allowed = new Set(['server/domain/pipeline.ts', 'server/domain/keyring.ts', 'server/domain/audit.ts', 'server/cli/rotateKey.ts', 'server/cli/rekey.ts']);
  const offenders = files.filter((f) => !allowed.has(f) && /\.transaction\(|\.begin\(|audit\.append(Many)?\(|bus\.publish\(/.test(readFileSync(join(root, f), 'utf8')));
  t.same(offenders, [], 'no other file opens a transaction, appends an audit entry or publishes an invalidation');
});
