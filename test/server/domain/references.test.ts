import t from 'tap';
import { expandReferences, parseReference, targetId, type ReferenceTarget } from '../../../server/domain/references.js';

const here = { environment: 'prod', path: '/app' };

t.test('parseReference', async (t) => {
  t.same(parseReference('KEY', here), { environment: 'prod', path: '/app', key: 'KEY' });
  t.same(parseReference('dev.KEY', here), { environment: 'dev', path: '/', key: 'KEY' });
  t.same(parseReference('dev.a.b.KEY', here), { environment: 'dev', path: '/a/b', key: 'KEY' });
  t.equal(parseReference('dev..KEY', here), null);
});

function resolver(values: Record<string, string>, calls: ReferenceTarget[][]) {
  return async (targets: ReferenceTarget[]) => {
    calls.push(targets);
    const out = new Map<string, string>();
    for (const tg of targets) {
      const v = values[`${tg.environment}:${tg.path}:${tg.key}`];
      if (v !== undefined) out.set(targetId(tg), v);
    }
    return out;
  };
}

t.test('local, cross-environment and nested references, in batched rounds', async (t) => {
  const known = new Map([[targetId({ ...here, key: 'USER' }), 'app']]);
  const calls: ReferenceTarget[][] = [];
  const out = await expandReferences(
    [{ value: 'postgres://${USER}:${dev.db.PASS}@${HOST}', ...here }],
    known,
    resolver({ 'dev:/db:PASS': 's3cret-${dev.SALT}', 'dev:/:SALT': 'xy', 'prod:/app:HOST': 'db.local' }, calls),
  );
  t.same(out, ['postgres://app:s3cret-xy@db.local']);
  t.equal(calls.length, 2, 'one resolve call per round, not per reference');
});

t.test('unknown references and cycles are left as written', async (t) => {
  const known = new Map<string, string>();
  const out = await expandReferences(
    [{ value: '${MISSING}-${A}', ...here }],
    known,
    resolver({ 'prod:/app:A': '${B}', 'prod:/app:B': '${A}' }, []),
  );
  t.match(out[0], /^\$\{MISSING\}-/);
});

t.test('fan-out bombs hit the size limit instead of exhausting memory', async (t) => {
  const big = 'x'.repeat(1024 * 1024);
  const fan = '${BIG}'.repeat(64);
  await t.rejects(
    expandReferences([{ value: '${F}${F}${F}', ...here }], new Map(), resolver({ 'prod:/app:F': fan, 'prod:/app:BIG': big }, [])),
    { code: 'VALIDATION' },
  );
});
