// The audit trail at scale (issue 31 points 4, 9): a trail built by direct inserts with the
// chain's own MAC rule (test/helpers/audit.ts bulkAppend); incremental verification after
// 10 appends reads only those, the route's verifier answers from the checkpoint, an edit
// after the checkpoint is found incrementally and one before it by a full walk. Rows read
// and MACs computed are asserted; times are printed (t.comment), never asserted.
//
// In the suite it runs at 100,000 entries (the runner's 300 s limit per file, on a shared
// machine). The 1,000,000-entry run:
//   AUDIT_SCALE_ENTRIES=1000000 npx tap --disable-coverage --timeout=3000 --reporter=tap dist/test/storage/auditScale.test.js
import t from 'tap';
import { connectDatabase } from '../../storage/db.js';
import type { Store } from '../../storage/index.js';
import { migrate } from '../../storage/migrate.js';
import { auditVerifier } from '../../server/domain/auditVerifier.js';
import { anchoredStore, bulkAppend } from '../helpers/audit.js';
import { freshDatabase } from '../helpers/db.js';

const append = (store: Store, n: number) =>
  store.transaction((s) =>
    s.audit.appendMany(
      s.tx,
      Array.from({ length: n }, (_, i) => ({ actorType: 'system' as const, actorId: null, eventType: 'test', secretKey: `K${i}`, metadata: { i } })),
    ),
  );

const total = Number(process.env.AUDIT_SCALE_ENTRIES ?? 100_000);
t.test(`${total} entries: incremental reads only the new ones; a full walk finds an old edit`, { timeout: 3_000_000 }, async (t) => {
  const db = await connectDatabase({ databaseUrl: await freshDatabase(t), dataDir: '/nonexistent', poolSize: 4 });
  t.teardown(() => db.close());
  const sql = db.sql;
  await migrate(sql);
  const { store, key } = await anchoredStore(sql);
  let at = performance.now();
  await bulkAppend(sql, key, total);
  t.comment(`built ${total} entries in ${((performance.now() - at) / 1000).toFixed(1)} s`);

  at = performance.now();
  const full = await store.auditVerify.full({ chunk: 5_000, write: true });
  t.comment(`full walk of ${total} entries: ${((performance.now() - at) / 1000).toFixed(1)} s (auditVerify.full, chunk 5,000, a turn of the event loop between chunks)`);
  t.match(full, { ok: true, entries: total, read: total });

  await append(store, 10);
  key.computed = 0;
  at = performance.now();
  const inc = await store.auditVerify.incremental({ write: true });
  t.comment(`incremental verify after 10 appends: ${(performance.now() - at).toFixed(1)} ms, ${inc.read} rows read, ${key.computed} MACs`);
  t.match(inc, { ok: true, entries: total + 10, from: total });
  t.equal(inc.read, 11, 'only the 10 new entries and the checkpoint entry are read');
  t.ok(key.computed <= 14, 'only their MACs, the checkpoint\'s, the anchor\'s and the new checkpoint\'s are computed');

  // The route's verifier: a verdict within a short wait, without walking the trail.
  await append(store, 10);
  const verifier = auditVerifier({ store, waitMs: 2_000 });
  key.computed = 0;
  t.match(await verifier.verify(), { ok: true, entries: total + 20, verifiedFrom: total + 10, inProgress: false }, 'the verifier answers from the checkpoint');
  t.ok(key.computed <= 14, 'having read 10 entries, not the trail');

  // A tampered entry after the checkpoint: found incrementally.
  await append(store, 5);
  const after = Number((await sql<{ id: number }[]>`select max(id) - 2 as id from audit_log`)[0]!.id);
  await sql`update audit_log set metadata = '{"i": 99}' where id = ${after}`;
  t.match(await store.auditVerify.incremental(), { ok: false, reason: 'entry', brokenAt: after }, 'an edit after the checkpoint');
  await sql`update audit_log set metadata = '{"i": 2}' where id = ${after}`;
  t.match(await store.auditVerify.incremental({ write: true }), { ok: true, entries: total + 25 });

  // A tampered entry before it: incremental does not read it, the full walk finds it.
  const before = Math.floor(total / 2);
  await sql`update audit_log set secret_key = 'edited' where id = ${before}`;
  t.match(await store.auditVerify.incremental(), { ok: true }, 'incremental: not read');
  at = performance.now();
  t.match(await store.auditVerify.full({ chunk: 5_000 }), { ok: false, reason: 'entry', brokenAt: before }, 'the full walk finds it');
  t.comment(`full walk to the edit at ${before}: ${((performance.now() - at) / 1000).toFixed(1)} s`);
});
