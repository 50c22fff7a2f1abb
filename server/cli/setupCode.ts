// setup-code: prints the first visit's setup code the service derives from AUTH_SECRET
// when SETUP_TOKEN is unset (server/auth/tokens.ts, setupCodeFrom). Run it where the
// service's environment is: `kubectl exec deploy/<name> -- node dist/server/cli/main.js setup-code`.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setupCodeFrom } from '../auth/tokens.js';
import { AUTH_SECRET_MESSAGE, DEV_KEYS_FILE, isValidAuthSecret } from '../config.js';
import { CliError, EXIT_OK, parse, type Command, type Context } from './command.js';

const HELP = `Usage: vault-standalone setup-code

Prints the one-time setup code that registering the superadmin (the first visit) asks
for in production mode when SETUP_TOKEN is unset. The service derives it from
AUTH_SECRET, so every replica and every restart has the same code, and nothing in the
chart's values or a rendered manifest reveals it. It is asked for only until the
superadmin exists; with SETUP_TOKEN set, that value is the code instead.

AUTH_SECRET comes from the environment (as the service reads it); outside production,
from DATA_DIR/${DEV_KEYS_FILE} when the variable is unset.

Options:
  -h, --help   this help

Exit codes: 0 the code was printed (stdout), 1 no usable AUTH_SECRET, 2 usage error.`;

export const setupCode: Command = {
  name: 'setup-code',
  summary: "print the first visit's setup code (derived from AUTH_SECRET)",
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, {});
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    let secret = env.AUTH_SECRET;
    if (secret === undefined && (env.NODE_ENV ?? 'development') !== 'production') {
      const file = join(resolve(env.DATA_DIR ?? './data'), DEV_KEYS_FILE);
      if (existsSync(file)) secret = /^AUTH_SECRET=(.*)$/m.exec(readFileSync(file, 'utf8'))?.[1];
    }
    if (secret === undefined) throw new CliError('AUTH_SECRET is not set: run with the environment of the service');
    if (!isValidAuthSecret(secret)) throw new CliError(AUTH_SECRET_MESSAGE);
    if (env.SETUP_TOKEN !== undefined && env.SETUP_TOKEN.trim() !== '') {
      io.err('note: SETUP_TOKEN is set in this environment: the service asks for that value instead');
    }
    io.out(setupCodeFrom(Buffer.from(secret.trim(), 'base64')));
    return EXIT_OK;
  },
};
