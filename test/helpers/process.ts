// The real entry point (dist/server/main.js) as a child process, with its output kept
// line by line: for tests of what the process prints and of what runs beside it.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../server/main.js', import.meta.url));
export const CLI = fileURLToPath(new URL('../../server/cli/main.js', import.meta.url));

/**
 * The command that starts `node <args>` as a test's child process: through env(1) with
 * NODE_OPTIONS removed. tap's runner puts its process-tracking loader
 * (@tapjs/processinfo, there for coverage, which this suite turns off) into NODE_OPTIONS
 * of every child a test spawns, whatever environment the test gives it; in the child it
 * about doubles the CPU spent loading the service's modules. Without it the child runs
 * as it does in production. env(1) execs node: the pid, signals and exit are node's.
 */
export function nodeCommand(args: string[]): [string, string[]] {
  return ['/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, ...args]];
}

export interface MainProcess {
  /** http://127.0.0.1:PORT once the service listens. */
  listening: Promise<string>;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Resolves with the first match of `pattern` in stdout. */
  output(pattern: RegExp): Promise<RegExpExecArray>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; stdout: string; stderr: string }>;
  kill(signal?: NodeJS.Signals): void;
  /** The spawned process's id (the wrapper's, when there is one). */
  pid: number | undefined;
}

/**
 * `nodeArgs` go before the entry (e.g. `--import` of a test fixture); `cwd` is the process's
 * folder; `wrapper` is a command that runs the service (e.g. strace), signals then go to it.
 */
export function runMain(env: Record<string, string>, nodeArgs: string[] = [], cwd?: string, wrapper: string[] = []): MainProcess {
  const [command, args] = nodeCommand([...nodeArgs, MAIN]);
  const child = spawn(wrapper[0] ?? command, wrapper.length > 0 ? [...wrapper.slice(1), command, ...args] : args, {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', CRYPTO_THREADS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  let stdout = '';
  let stderr = '';
  const waiting: Array<{ pattern: RegExp; resolve: (m: RegExpExecArray) => void }> = [];
  const check = () => {
    for (const w of [...waiting]) {
      const m = w.pattern.exec(stdout);
      if (m) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(m);
      }
    }
  };
  child.stdout.on('data', (d) => {
    stdout += d;
    check();
  });
  child.stderr.on('data', (d) => (stderr += d));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  const output = (pattern: RegExp) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      waiting.push({ pattern, resolve });
      check();
      void exit.then((r) => reject(new Error(`exited ${r.code} before ${pattern}: ${r.stderr}`)));
    });
  const listening = output(/listening on (http:\/\/[\d.]+:\d+)/).then((m) => m[1]!);
  listening.catch(() => {}); // tests that expect an exit never wait for it
  return {
    listening,
    exit,
    output,
    stop(signal = 'SIGTERM') {
      if (child.exitCode === null) child.kill(signal);
      return exit;
    },
    kill: (signal = 'SIGTERM') => void child.kill(signal),
    pid: child.pid,
  };
}
