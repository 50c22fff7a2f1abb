// What every subcommand shares: argument parsing (node:util parseArgs, strict), the
// exit codes, and the two error kinds a command throws instead of exiting itself.
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { textLogger, type Logger } from '../log.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Something went wrong that the operator must act on: exit 1 with the message. */
export class CliError extends Error {
  override readonly name = 'CliError';
}

/** The command line itself is wrong: exit 2 with the message and a pointer to --help. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface Io {
  /** Data and results (the only stream that may carry a generated value, on request). */
  out(line: string): void;
  /** Progress, notes, warnings and errors. */
  err(line: string): void;
}

/**
 * Test seams, passed by tests only (the installed command line passes none): `step` is
 * awaited after each unit of work of a long command (rotate-key: 0 before the first
 * re-wrap, then after each re-wrapped data key, inside the transaction; rekey: after each
 * committed unit, numbered from 1: the new MAC key, the new audit key, then per project
 * its start, each batch and its finish), so a test can fail it or hold it there and kill
 * the process.
 */
export interface CommandHooks {
  step?(n: number): Promise<void> | void;
}

export interface Context {
  /** A copy of the environment taken at start; the CLI deletes the key variables from process.env. */
  env: Record<string, string | undefined>;
  io: Io;
  hooks?: CommandHooks;
}

export interface Command {
  name: string;
  summary: string;
  /** Full --help text. */
  help: string;
  run(argv: string[], ctx: Context): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * Strict parsing: unknown options and stray positionals are usage errors. `--help`
 * is added to every command; the caller prints the help when `help` is true.
 */
export function parse<O extends Options>(argv: string[], options: O) {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
    return values as { [K in keyof O]?: O[K]['type'] extends 'boolean' ? boolean : string } & { help?: boolean };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/** Argument values are visible to every user on the host (ps, /proc/<pid>/cmdline). */
export function refuseKeyLikeArguments(argv: string[]): void {
  const bad = argv.find((a) => /[0-9a-fA-F]{32}/.test(a));
  if (bad !== undefined) {
    throw new UsageError(
      'refusing an argument that looks like a key: keys are read from the environment only ' +
        '(ENCRYPTION_KEY, NEW_ENCRYPTION_KEY), because command-line arguments are visible to every user in `ps`',
    );
  }
}

/**
 * A path given on the command line, resolved against the caller's directory: `npm run
 * cli` runs in the package root, and npm keeps the directory it was called from in
 * INIT_CWD. (DATA_DIR is not such a path: it names the service's folder and resolves as
 * the service resolves it.)
 */
export function callerPath(env: Record<string, string | undefined>, path: string): string {
  return resolve(env.INIT_CWD || process.cwd(), path);
}

/**
 * The service's log for commands that start the services: its warnings and errors as
 * plain lines on stderr. Its start-up information (migrations, audit head, sweeps) is
 * the service's chatter, not the command's output, and is left out.
 */
export const stderrLog = (io: Io): Logger =>
  textLogger(
    {
      warn: (m) => io.err(`warning: ${m}`),
      error: (m) => io.err(`error: ${m}`),
    },
    { fields: false },
  );
