// The event-loop watchdog (server/watchdog.ts) in a child process whose main thread then
// spins (as PGlite's PANIC did, issue 31): the watchdog thread writes its one line and
// kills the process. And a loop that turns is left alone.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { nodeCommand } from '../helpers/process.js';

const WATCHDOG = fileURLToPath(new URL('../../server/watchdog.js', import.meta.url));

function run(body: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const source = `const { startWatchdog } = await import(${JSON.stringify(WATCHDOG)}); ${body}`;
  const [command, args] = nodeCommand(['--input-type=module', '-e', source]);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })));
}

t.test('a main thread that stops turning is killed, with one line saying why', async (t) => {
  const r = await run(`startWatchdog(300); setTimeout(() => { for (;;) {} }, 50);`);
  t.equal(r.signal, 'SIGKILL', 'killed');
  const lines = r.stderr.trim().split('\n');
  t.equal(lines.length, 1, r.stderr);
  t.match(JSON.parse(lines[0]!), { level: 'fatal', event: 'watchdog', msg: /event loop has not turned for \d+ s \(WATCHDOG_SECONDS=0\.3\)/ });
});

t.test('a loop that turns is left alone; 0 starts nothing', async (t) => {
  // Runs past several of the watchdog's limits with the loop turning, then stops it and exits.
  const r = await run(`const w = startWatchdog(300); let n = 0; const i = setInterval(async () => { if (++n === 30) { clearInterval(i); await w.stop(); startWatchdog(0); console.log('done'); } }, 40);`);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.signal, null);
  t.equal(r.stdout.trim(), 'done');
});
