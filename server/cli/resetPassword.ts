// reset-password: the lost superadmin's way back in (or anyone's), for whoever holds the
// database and ENCRYPTION_KEY. Sets the person's password through the same domain
// function as the superadmin's reset (argon2id hash, audited as the service, every
// session of theirs ended; with REDIS_URL, on every running replica at once).
import { randomInt } from 'node:crypto';
import { SYSTEM } from '../domain/access.js';
import { AppError } from '../errors.js';
import { CliError, EXIT_OK, UsageError, parse, type Command, type Context } from './command.js';
import { askRunningService, withServices } from './database.js';

const HELP = `Usage: vault-standalone reset-password --email EMAIL [--password-stdin]

Sets a new password for the person with this email (the superadmin who lost theirs,
or anyone), and ends every session they hold. Recorded in the audit trail
(reset-user-password, by the service). A disabled person stays disabled.

Without --password-stdin a password of 20 characters (about 115 bits) is generated
and printed once on stdout; hand it over securely. With --password-stdin the new
password is read from standard input (one trailing newline is dropped; 12 to 256
characters). A password is never taken from an argument: arguments are visible to
every user of the host in \`ps\`.

Environment: the service's own: ENCRYPTION_KEY, and DATABASE_URL (or DATA_DIR for the
embedded database). With the embedded database, a running service is asked over its
admin socket (DATA_DIR/run/admin.sock) and ends the sessions at once. With REDIS_URL
set, running replicas end the person's sessions at once; without it, within a minute.

Options:
  --email EMAIL       the person's email address
  --password-stdin    read the new password from standard input
  -h, --help          this help

Exit codes: 0 done, 1 failure (nobody has this email, password refused), 2 usage error.`;

/** 20 characters from an alphabet without look-alikes (57 symbols, about 115 bits). */
export function generatePassword(): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  let out = '';
  for (let i = 0; i < 20; i++) out += alphabet[randomInt(alphabet.length)];
  return out;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}


export const resetPassword: Command = {
  name: 'reset-password',
  summary: "set a person's password (a lost superadmin's); ends their sessions, audited",
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, { email: { type: 'string' }, 'password-stdin': { type: 'boolean' } });
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    if (!o.email?.trim()) throw new UsageError('--email EMAIL is required');
    const fromStdin = o['password-stdin'] === true;
    const password = fromStdin ? await readStdin() : generatePassword();

    const done = (user: { email: string; disabled: boolean }) => {
      io.err(`password of ${user.email} set; every session of theirs has ended${user.disabled ? ' (the account is disabled: enable it in People)' : ''}`);
      if (!fromStdin) io.out(`new password for ${user.email}: ${password}`);
      return EXIT_OK;
    };
    // A running service on the embedded database holds the folder: it sets the password.
    const remote = await askRunningService(env, { command: 'reset-password', email: o.email, password });
    if (remote !== undefined) return done(JSON.parse(remote.toString('utf8')) as { email: string; disabled: boolean });

    return withServices(env, io, async (services) => {
      const user = await services.users.resetPassword(SYSTEM, { email: o.email! }, password).catch((err: unknown) => {
        // "User with email … not found", "newPassword must be 12 to 256 characters"
        if (err instanceof AppError) throw new CliError(err.message.replace(/^newPassword/, 'the password'));
        throw err;
      });
      return done(user);
    });
  },
};
