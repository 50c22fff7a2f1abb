// .ci/tap-count.mjs: CI reads only its last line and keeps only the tail of the output, so
// the count is the last line and each failed assertion is named just before it.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '../chart/lib.js';

const SCRIPT = join(ROOT, '.ci', 'tap-count.mjs');
const count = (tap: string) => {
  const r = spawnSync(process.execPath, [SCRIPT], { input: tap, encoding: 'utf8' });
  return { code: r.status, lines: r.stdout.trimEnd().split('\n') };
};

const TAP = `TAP version 14
# Subtest: dist/test/a.test.js
    # Subtest: group one
        ok 1 - fine
        not ok 2 - the thing holds
          ---
          found: 3
          wanted: 4
          ...
        ok 3 - also fine # SKIP not here
        1..3
    not ok 1 - group one
    1..1
not ok 1 - dist/test/a.test.js
# Subtest: dist/test/b.test.js
    ok 1 - x
    1..1
ok 2 - dist/test/b.test.js
1..2
`;

t.test('leaf assertions counted (summaries and skips not), failures named with their diagnostics, the count last', async (t) => {
  const { code, lines } = count(TAP);
  t.equal(code, 1);
  t.equal(lines.at(-1), '2 passed, 1 failed, 1 skipped');
  t.same(lines.slice(0, -1), ['FAILED: dist/test/a.test.js > group one > 2 - the thing holds', '      ---', '      found: 3', '      wanted: 4', '      ...']);
});

t.test('all passing: only the count, exit 0; nothing ran: exit 1', async (t) => {
  const passing = count('TAP version 14\nok 1 - a\nok 2 - b\n1..2\n');
  t.same(passing, { code: 0, lines: ['2 passed, 0 failed'] });
  t.same(count('TAP version 14\n1..0\n'), { code: 1, lines: ['0 passed, 0 failed'] });
});
