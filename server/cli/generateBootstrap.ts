// generate-bootstrap: the four values that must exist before the first start, written
// once to a new file (mode 0600) in the format the infrastructure code reads.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { CliError, EXIT_OK, UsageError, callerPath, parse, type Command, type Context } from './command.js';

export const FORMATS = ['env', 'tfvars', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

/** Written in the caller's directory when --out is not given; .gitignore and .dockerignore list them. */
export const DEFAULT_OUT: Record<Format, string> = {
  env: 'vault-bootstrap.env',
  tfvars: 'vault-bootstrap.auto.tfvars',
  yaml: 'vault-bootstrap.yaml',
};

export interface Bootstrap {
  encryptionKey: string;
  authSecret: string;
  postgresqlPassword: string;
  redisPassword: string;
}

export function generateBootstrapValues(): Bootstrap {
  return {
    encryptionKey: randomBytes(16).toString('hex'), // exactly 32 hex characters
    authSecret: randomBytes(32).toString('base64'),
    postgresqlPassword: randomBytes(12).toString('hex'), // 24 hex characters
    redisPassword: randomBytes(12).toString('hex'),
  };
}

/** A YAML double-quoted scalar: always quoted, so no value is ever read as a number, bool or null. */
export function yamlQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === '"') out += '\\"';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || c === 0x7f || (c >= 0x80 && c <= 0x9f) || c === 0x2028 || c === 0x2029) {
      out += `\\u${c.toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return `${out}"`;
}

/** An HCL (tfvars) quoted string: escapes and no template interpolation. */
export function hclQuote(s: string): string {
  const body = s
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/\n/g, '\\n')
    .replace(/\r/g, '\\r')
    .replace(/\t/g, '\\t')
    .replace(/\$\{/g, () => '$${')
    .replace(/%\{/g, '%%{');
  return `"${body}"`;
}

/** An env-file value: bare when it is plainly safe, else single-quoted. */
export function envQuote(s: string): string {
  if (/^[A-Za-z0-9+/=._:@-]*$/.test(s)) return s;
  if (s.includes('\n')) throw new Error('an env file value cannot span lines');
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function header(comment: string): string {
  return (
    `${comment} vault-standalone bootstrap secrets, generated ${new Date().toISOString()}.\n` +
    `${comment} KEEP THIS FILE OUT OF GIT and back it up somewhere safe: without ENCRYPTION_KEY\n` +
    `${comment} the stored secrets cannot be read. ENCRYPTION_KEY must never change once secrets\n` +
    `${comment} are stored (change it only with \`vault-standalone rotate-key\`).\n`
  );
}

export function render(format: Format, b: Bootstrap): string {
  switch (format) {
    case 'env':
      return (
        header('#') +
        '# ENCRYPTION_KEY and AUTH_SECRET: Secret vault-secrets (service namespace).\n' +
        '# POSTGRESQL_PASSWORD and REDIS_PASSWORD: Helm values postgresql.auth.password and redis.auth.password.\n' +
        `ENCRYPTION_KEY=${envQuote(b.encryptionKey)}\n` +
        `AUTH_SECRET=${envQuote(b.authSecret)}\n` +
        `POSTGRESQL_PASSWORD=${envQuote(b.postgresqlPassword)}\n` +
        `REDIS_PASSWORD=${envQuote(b.redisPassword)}\n`
      );
    case 'tfvars':
      // Aligned as `terraform fmt` aligns consecutive attributes.
      return (
        header('#') +
        '# encryption_key and auth_secret: Secret vault-secrets (service namespace).\n' +
        '# postgresql_password and redis_password: the Helm values blob in Secret vault-helm-secrets.\n' +
        `encryption_key      = ${hclQuote(b.encryptionKey)}\n` +
        `auth_secret         = ${hclQuote(b.authSecret)}\n` +
        `postgresql_password = ${hclQuote(b.postgresqlPassword)}\n` +
        `redis_password      = ${hclQuote(b.redisPassword)}\n`
      );
    case 'yaml':
      return (
        header('#') +
        '#\n' +
        '# `secrets` is NOT a Helm value: infrastructure code creates the Secret vault-secrets\n' +
        '# (service namespace) from it, with the keys ENCRYPTION_KEY and AUTH_SECRET. Remove it\n' +
        '# before handing the rest to Helm (the chart\'s values schema rejects it on purpose, so\n' +
        '# the root key never lands in a Helm release). The rest is the Helm values blob of the\n' +
        '# Secret vault-helm-secrets.\n' +
        'secrets:\n' +
        `  encryptionKey: ${yamlQuote(b.encryptionKey)}\n` +
        `  authSecret: ${yamlQuote(b.authSecret)}\n` +
        'postgresql:\n' +
        '  auth:\n' +
        `    password: ${yamlQuote(b.postgresqlPassword)}\n` +
        'redis:\n' +
        '  auth:\n' +
        `    password: ${yamlQuote(b.redisPassword)}\n`
      );
  }
}

/** 'ignored', 'not-ignored', or 'no-repo' (also when git is not installed). */
export function gitStatusOf(file: string): 'ignored' | 'not-ignored' | 'no-repo' {
  const dir = dirname(file);
  const inside = spawnSync('git', ['-C', dir, 'rev-parse', '--is-inside-work-tree'], { encoding: 'utf8' });
  if (inside.error || inside.status !== 0 || inside.stdout.trim() !== 'true') return 'no-repo';
  const check = spawnSync('git', ['-C', dir, 'check-ignore', '-q', '--', file], { encoding: 'utf8' });
  if (check.status === 0) return 'ignored';
  if (check.status === 1) return 'not-ignored';
  return 'no-repo';
}

function writeNew(file: string, body: string): void {
  let fd: number;
  try {
    // 'wx': fail if the file exists. It may hold the only copy of a key in use.
    fd = openSync(file, 'wx', 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new CliError(
        `${file} already exists; refusing to overwrite it (it may hold the only copy of the ENCRYPTION_KEY in use). ` +
          'Choose another --out, or move the old file away yourself.',
      );
    }
    if (code === 'ENOENT') throw new CliError(`cannot create ${file}: its directory does not exist`);
    throw new CliError(`cannot create ${file}: ${(err as Error).message}`);
  }
  try {
    fchmodSync(fd, 0o600); // exactly 0600, whatever the umask
    writeSync(fd, body);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

const HELP = `Usage: vault-standalone generate-bootstrap [--format env|tfvars|yaml] [--out FILE | --stdout]

Generates the bootstrap secrets that must exist before the service first starts:
  ENCRYPTION_KEY       32 hex characters (16 random bytes); never changes once secrets are stored
  AUTH_SECRET          base64 of 32 random bytes; signs user session tokens
  postgresql password  24 hex characters (12 random bytes)
  redis password       24 hex characters (12 random bytes)

Options:
  --format FORMAT  env (default): ENCRYPTION_KEY=... AUTH_SECRET=... POSTGRESQL_PASSWORD=... REDIS_PASSWORD=...
                   tfvars: encryption_key = "...", auth_secret, postgresql_password, redis_password
                   yaml:   secrets.encryptionKey / secrets.authSecret (for the Secret vault-secrets, not a
                           Helm value) plus Helm values postgresql.auth.password and redis.auth.password
  --out FILE       write a NEW file with mode 0600; an existing file is never overwritten (exit 1).
                   Relative to the directory you run the command in (also under \`npm run cli\`).
                   Default: ${DEFAULT_OUT.env}, ${DEFAULT_OUT.tfvars} or ${DEFAULT_OUT.yaml}
  --stdout         print to stdout instead (the only way the values are ever printed)
  -h, --help       this help

The file belongs in .gitignore: a warning is printed when it lies inside a git work
tree and is not ignored.

Exit codes: 0 written, 1 failure (file exists, cannot write), 2 usage error.`;

export const generateBootstrap: Command = {
  name: 'generate-bootstrap',
  summary: 'generate ENCRYPTION_KEY, AUTH_SECRET and the bundled database and cache passwords',
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    const o = parse(argv, {
      format: { type: 'string', short: 'f' },
      out: { type: 'string', short: 'o' },
      stdout: { type: 'boolean' },
    });
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    const format = (o.format ?? 'env') as Format;
    if (!FORMATS.includes(format)) throw new UsageError(`--format must be one of ${FORMATS.join(', ')}`);
    if (o.out !== undefined && o.stdout) throw new UsageError('give --out FILE or --stdout, not both');
    if (o.out === '') throw new UsageError('--out needs a file name');

    const body = render(format, generateBootstrapValues());
    if (o.stdout) {
      io.out(body.trimEnd());
      io.err('Printed to stdout. Keep it out of git, shell history and logs.');
      return EXIT_OK;
    }
    const file = callerPath(env, o.out ?? DEFAULT_OUT[format]);
    writeNew(file, body);
    io.out(`wrote ${file} (mode 0600, format ${format}); the values are not printed.`);
    io.out('Keep this file out of git: list it in .gitignore, and back it up somewhere safe.');
    const git = gitStatusOf(file);
    if (git === 'not-ignored') {
      const bar = '!'.repeat(78);
      io.err(
        `${bar}\n` +
          `  WARNING: ${file} is inside a git work tree and NOT ignored.\n` +
          '  It holds the root key of every stored secret. Add it to .gitignore NOW,\n' +
          '  and never `git add` it.\n' +
          bar,
      );
    }
    return EXIT_OK;
  },
};
