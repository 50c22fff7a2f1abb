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

function fakes(opts: { failAppend?: boolean; logAppends?: boolean } = {}) {
  const log: string[] = [];
  const appended: AuditEvent[] = [];
  const store: Pick<Store, 'transaction'> = {
    async transaction<T>(fn: (s: TxStores) => Promise<T>): Promise<T> {
      log.push('begin');
      // Entries reach the trail only when the transaction commits.
      const written: AuditEvent[] = [];
      const appendMany = async (_tx: unknown, es: AuditEvent[]) => {
        if (opts.failAppend) throw new AppError('UNAVAILABLE', 'audit trail unavailable');
        if (opts.logAppends) log.push(`append ${es.map((e) => e.eventType).join(',')}`);
        written.push(...es);
      };
      const s = { tx: {}, audit: { appendMany } } as unknown as TxStores;
      try {
        const out = await fn(s);
        log.push('commit');
        appended.push(...written);
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

/** A change whose body waits until `open` resolves: holds its group's transaction open. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

t.test('grouped changes queued while a group runs commit together, entries in order', async (t) => {
  const { log, appended, changes } = fakes({ logAppends: true });
  const first = gate();
  const by = (id: string) => changes.groupedByCaller({ actorType: 'identity', actorId: id }, { ip: `10.0.0.${id}` }, 'one key');
  const alone = by('1').run(async ({ audit }) => {
    await first.opened;
    await audit({ eventType: 'login-1' });
    return 1;
  });
  // Queued while the first group's transaction is open: the next group.
  const queued = ['2', '3', '4'].map((id) =>
    by(id).run(async ({ audit, invalidate }) => {
      log.push(`body ${id}`);
      await audit({ eventType: `revoke-${id}` });
      invalidate(topics.accessToken, `t${id}`);
      return Number(id);
    }),
  );
  first.open();
  t.same(await Promise.all([alone, ...queued]), [1, 2, 3, 4]);
  t.same(log, [
    'begin', 'append login-1', 'commit',
    'begin', 'body 2', 'body 3', 'body 4', 'append revoke-2,revoke-3,revoke-4', 'commit',
    `publish ${topics.accessToken} t2`, `publish ${topics.accessToken} t3`, `publish ${topics.accessToken} t4`,
  ], 'three changes queued together: one transaction, one append, one commit');
  t.match(appended.map((e) => [e.eventType, e.actorId, e.ip]), [
    ['login-1', '1', '10.0.0.1'], ['revoke-2', '2', '10.0.0.2'], ['revoke-3', '3', '10.0.0.3'], ['revoke-4', '4', '10.0.0.4'],
  ], 'each entry names its own change\'s actor and address');
});

t.test('a grouped change that throws rolls its group back; each change then runs alone and gets its own answer', async (t) => {
  const { log, appended, changes } = fakes({ logAppends: true });
  const first = gate();
  const by = () => changes.groupedByCaller({ actorType: 'identity', actorId: 'i1' }, {}, 'one key');
  const holder = by().run(async ({ audit }) => {
    await first.opened;
    await audit({ eventType: 'login-0' });
  });
  const change = (name: string, fail = false) =>
    by().run(async ({ audit, invalidate }) => {
      log.push(`body ${name}`);
      await audit({ eventType: name });
      invalidate(topics.accessToken, name);
      if (fail) throw new AppError('UNAUTHORIZED', 'Invalid credentials');
      return name;
    });
  const ok1 = change('login-1');
  const bad = change('login-bad', true);
  const ok2 = change('login-2');
  first.open();
  await holder;
  t.equal(await ok1, 'login-1');
  await t.rejects(bad, { code: 'UNAUTHORIZED', message: 'Invalid credentials' });
  t.equal(await ok2, 'login-2');
  t.same(log.slice(3), [
    'begin', 'body login-1', 'body login-bad', 'rollback',
    'begin', 'body login-1', 'append login-1', 'commit', `publish ${topics.accessToken} login-1`,
    'begin', 'body login-bad', 'append login-bad', 'rollback',
    'begin', 'body login-2', 'append login-2', 'commit', `publish ${topics.accessToken} login-2`,
  ], 'the group rolled back as a whole, then one transaction per change');
  t.same(appended.map((e) => e.eventType), ['login-0', 'login-1', 'login-2'], 'the failed change wrote no entry');
});

t.test('in a group, changes with another key run at the same time; with the same key, one after another; entries in queue order', async (t) => {
  const { log, appended, changes } = fakes({ logAppends: true });
  const first = gate();
  const by = (key: string) => changes.groupedByCaller({ actorType: 'identity', actorId: 'i1' }, {}, key);
  const holder = by('h').run(async () => first.opened);
  // a1 waits for b to start: were the group one change after another, it would never end.
  const bStarted = gate();
  const a1 = by('a').run(async ({ audit }) => {
    log.push('a1 start');
    await bStarted.opened;
    await audit({ eventType: 'a1' });
    log.push('a1 end');
  });
  const b = by('b').run(async ({ audit }) => {
    log.push('b start');
    bStarted.open();
    await audit({ eventType: 'b' });
  });
  const a2 = by('a').run(async ({ audit }) => {
    log.push('a2 start');
    await audit({ eventType: 'a2' });
  });
  first.open();
  await Promise.all([holder, a1, b, a2]);
  t.ok(log.indexOf('b start') < log.indexOf('a1 end'), 'b ran while a1 was under way');
  t.ok(log.indexOf('a1 end') < log.indexOf('a2 start'), 'a2 started only once a1 had ended');
  t.same(appended.map((e) => e.eventType), ['a1', 'b', 'a2'], 'entries in the order the changes came');
  t.equal(log.filter((l) => l === 'commit').length, 2, 'the holder alone, then one group');
});

t.test('in a group, a change that has sent its statements lets the next one with its key start', async (t) => {
  const { log, appended, changes } = fakes({ logAppends: true });
  const first = gate();
  const by = () => changes.groupedByCaller({ actorType: 'identity', actorId: 'i1' }, {}, 'one key');
  const holder = by().run(async () => first.opened);
  const a2Started = gate();
  const a1 = by().run(async ({ audit, sent }) => {
    log.push('a1 sent');
    sent();
    // Waits for a2 to start: without sent(), a2 would wait for a1 to end, and neither would.
    await a2Started.opened;
    await audit({ eventType: 'a1' });
    log.push('a1 end');
  });
  const a2 = by().run(async ({ audit }) => {
    log.push('a2 start');
    a2Started.open();
    await audit({ eventType: 'a2' });
  });
  first.open();
  await Promise.all([holder, a1, a2]);
  t.same(log.filter((l) => /^a\d /.test(l)), ['a1 sent', 'a2 start', 'a1 end']);
  t.same(appended.map((e) => e.eventType), ['a1', 'a2'], 'entries still in the order the changes came');
});

t.test('a group whose audit append fails fails every change in it and publishes nothing', async (t) => {
  const { log, appended, changes } = fakes({ failAppend: true });
  const by = () => changes.groupedByCaller({ actorType: 'identity', actorId: 'i1' }, {}, 'one key');
  const results = await Promise.allSettled(
    [1, 2, 3].map((n) =>
      by().run(async ({ audit, invalidate }) => {
        await audit({ eventType: `revoke-${n}` });
        invalidate(topics.accessToken, `t${n}`);
      }),
    ),
  );
  t.same(results.map((r) => r.status), ['rejected', 'rejected', 'rejected']);
  t.match(results, [{ reason: { code: 'UNAVAILABLE' } }, { reason: { code: 'UNAVAILABLE' } }, { reason: { code: 'UNAVAILABLE' } }]);
  t.same(appended, []);
  t.notOk(log.some((l) => l.startsWith('publish')), 'nothing published');
  t.notOk(log.includes('commit'), 'nothing committed');
});

t.test('in server/, only the pipeline opens transactions and appends to the audit trail', async (t) => {
  // From dist/test/... when built, from test/... when run as TypeScript (npm run test:one).
  const root = fileURLToPath(new URL(import.meta.url.includes('/dist/test/') ? '../../../../' : '../../../', import.meta.url));
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
  // actor, nothing to invalidate), the start-up instance record (integrity.ts: written once,
  // at the first start or the upgrade, before any request), the offline key rotation and
  // the online rekey (its own small transactions, each audited, publishing its
  // invalidations) have their own transactions; so does the webhook worker's claim (a lease
  // on due webhooks taken with FOR UPDATE SKIP LOCKED: delivery bookkeeping, no audited change).
  const allowed = new Set(['server/domain/pipeline.ts', 'server/domain/keyring.ts', 'server/domain/integrity.ts', 'server/domain/audit.ts', 'server/cli/rotateKey.ts', 'server/cli/rekey.ts', 'server/domain/webhookWorker.ts']);
  const offenders = files.filter((f) => !allowed.has(f) && /\.transaction\(|\.begin\(|audit\.append(Many)?\(|bus\.publish\(/.test(readFileSync(join(root, f), 'utf8')));
  t.same(offenders, [], 'no other file opens a transaction, appends an audit entry or publishes an invalidation');
});
