// The command line's dispatcher: the commands, usage, and how a command's error becomes
// an exit code. main.ts is the installed entry; tests drive runCli with hooks.
import { readFileSync } from 'node:fs';
import { auditVerify } from './auditVerify.js';
import { backup, restore } from './backup.js';
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError, type Command, type CommandHooks, type Io } from './command.js';
import { generateBootstrap } from './generateBootstrap.js';
import { hsmInit } from './hsmInit.js';
import { rekey } from './rekey.js';
import { resetPassword } from './resetPassword.js';
import { rotateKey } from './rotateKey.js';
import { seedInventory } from './seedInventory.js';
import { setupCode } from './setupCode.js';

const COMMANDS: Command[] = [generateBootstrap, seedInventory, rotateKey, rekey, hsmInit, auditVerify, resetPassword, setupCode, backup, restore];

/** The package's version (server/cli or dist/server/cli → the package root). */
export function packageVersion(): string {
  try {
    const url = new URL(import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json', import.meta.url);
    return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    'Usage: vault-standalone <command> [options]',
    '       vault-standalone --version',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run `vault-standalone <command> --help` for a command\'s options.',
    'Database and keys come from the same environment variables as the service',
    '(DATABASE_URL or DATA_DIR, ENCRYPTION_KEY); keys are never taken from arguments.',
    '',
    'Exit codes: 0 ok, 1 failure, 2 usage error.',
  ].join('\n');
}

const io: Io = {
  out: (line) => void process.stdout.write(`${line}\n`),
  err: (line) => void process.stderr.write(`${line}\n`),
};

/**
 * Runs one command line. `hooks` are test seams (see CommandHooks); the installed
 * command (main.ts) never passes any.
 */
export async function runCli(argv: string[], hooks?: CommandHooks): Promise<number> {
  // The commands get a copy; key material does not stay in process.env, where any
  // child process (git) would inherit it.
  const env = { ...process.env };
  for (const k of ['ENCRYPTION_KEY', 'NEW_ENCRYPTION_KEY', 'AUTH_SECRET', 'PKCS11_PIN', 'NEW_PKCS11_PIN']) delete process.env[k];

  const [name, ...rest] = argv;
  if (name === undefined) {
    io.err(usage());
    return EXIT_USAGE;
  }
  if (name === '--version' || name === '-V') {
    io.out(`vault-standalone ${packageVersion()} (node ${process.version})`);
    return EXIT_OK;
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    const topic = name === 'help' ? COMMANDS.find((c) => c.name === rest[0]) : undefined;
    io.out(topic ? topic.help : usage());
    return EXIT_OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(`unknown command: ${name}\n\n${usage()}`);
    return EXIT_USAGE;
  }
  try {
    return await command.run(rest, { env, io, hooks });
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${command.name}: ${err.message}\nRun \`vault-standalone ${command.name} --help\` for usage.`);
      return EXIT_USAGE;
    }
    if (err instanceof CliError) {
      io.err(`${command.name}: ${err.message}`);
      return EXIT_FAILURE;
    }
    const e = err as { message?: string; code?: string };
    io.err(`${command.name}: unexpected error: ${e?.message ?? String(err)}${e?.code ? ` (${e.code})` : ''}`);
    return EXIT_FAILURE;
  }
}
