// The disk guard's rules with a fake statfs: levels against the reserve and the warning
// threshold, admit() refusing below the reserve with DiskFullError, a freed disk taking
// writes on the next admit (no stale look while not `ok`), one statfs for concurrent
// looks, one onChange per change of level. The real disk: test/faults/diskFull.test.ts.
import t from 'tap';
import { diskGuard, levelOf } from '../../storage/diskGuard.js';
import { DiskFullError } from '../../storage/errors.js';

const MiB = 1024 * 1024;

t.test('levels', async (t) => {
  t.equal(levelOf(100 * MiB, 64 * MiB, 256 * MiB), 'low');
  t.equal(levelOf(300 * MiB, 64 * MiB, 256 * MiB), 'ok');
  t.equal(levelOf(64 * MiB - 1, 64 * MiB, 256 * MiB), 'full');
  t.equal(levelOf(64 * MiB, 64 * MiB, 256 * MiB), 'low', 'exactly the reserve still takes writes');
});

t.test('admit refuses below the reserve and takes writes again once space is freed', async (t) => {
  let free = 300 * MiB;
  let looks = 0;
  const changes: string[] = [];
  const guard = diskGuard({
    dir: '/data',
    reserveBytes: 64 * MiB,
    warnBytes: 256 * MiB,
    intervalMs: 60_000,
    statfs: async () => {
      looks++;
      return { bavail: free / 4096, bsize: 4096, blocks: 1000 * 256 };
    },
    onChange: (s, prev) => changes.push(`${prev ?? '-'}>${s.level}`),
  });
  t.teardown(() => guard.stop());
  await guard.admit();
  const afterFirst = looks;
  await guard.admit();
  t.equal(looks, afterFirst, 'an ok disk looked at less than a second ago is not looked at again');
  free = 10 * MiB;
  await guard.refresh();
  const err = await guard.admit().then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof DiskFullError, 'refused');
  t.equal((err as DiskFullError).code, '53100', "PostgreSQL's disk_full");
  t.match((err as DiskFullError).message, /the disk holding \/data is full: 10 MiB free, below the 64 MiB reserve \(DISK_RESERVE_BYTES\)/);
  free = 100 * MiB;
  await guard.admit(); // looked at again at once: a full disk is never trusted from memory
  t.equal(guard.state()?.level, 'low');
  const before = looks;
  await Promise.all([guard.refresh(), guard.refresh(), guard.refresh()]);
  t.equal(looks, before + 1, 'concurrent looks share one statfs');
  t.same(changes, ['->ok', 'ok>full', 'full>low']);
});
