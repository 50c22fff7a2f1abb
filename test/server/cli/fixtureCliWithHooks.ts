// The command line with its test seams set (server/cli/command.ts CommandHooks), run as a
// child process so a test can kill it mid-transaction. The seams live here, in the
// tests, not in the command: TEST_FAIL_AT_STEP=N throws at step N; TEST_PAUSE_AT_STEP=N
// prints "paused" on stderr at step N and waits for SIGUSR2.
import { runCli } from '../../../server/cli/run.js';

function stepOf(name: string): number | undefined {
  const raw = process.env[name];
  delete process.env[name];
  return raw === undefined || raw === '' ? undefined : Number(raw);
}
const failAt = stepOf('TEST_FAIL_AT_STEP');
const pauseAt = stepOf('TEST_PAUSE_AT_STEP');

const code = await runCli(process.argv.slice(2), {
  async step(n) {
    if (n === failAt) throw new Error(`fault injected by the test at step ${n}`);
    if (n === pauseAt) {
      const keepAlive = setInterval(() => {}, 1 << 30);
      const resumed = new Promise<void>((resume) => process.once('SIGUSR2', () => resume()));
      process.stderr.write('paused\n');
      await resumed;
      clearInterval(keepAlive);
    }
  },
});
await new Promise<void>((done) => process.stderr.write('', () => done()));
process.exit(code);
