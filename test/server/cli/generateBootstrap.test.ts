// generate-bootstrap: every format parses back to values that meet the seed's rules,
// the file is 0600 and never overwritten, values reach stdout only on request.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEFAULT_OUT, FORMATS } from '../../../server/cli/generateBootstrap.js';
import { isValidAuthSecret } from '../../../server/config.js';
import { dockerignorePatterns, dockerignored } from '../../chart/lib.js';
import { REPO, runCli, tempDir } from './helpers.js';

const env = { NODE_ENV: 'test' };

interface Values {
  encryptionKey: string;
  authSecret: string;
  postgresqlPassword: string;
  redisPassword: string;
}

function checkRules(t: Test, v: Values) {
  t.match(v.encryptionKey, /^[0-9a-f]{32}$/, 'ENCRYPTION_KEY: 32 hex characters');
  t.match(v.authSecret, /^[A-Za-z0-9+/]+={0,2}$/, 'AUTH_SECRET: base64');
  t.equal(Buffer.from(v.authSecret, 'base64').length, 32, 'AUTH_SECRET: 32 bytes');
  t.ok(isValidAuthSecret(v.authSecret), 'AUTH_SECRET accepted by the service');
  t.match(v.postgresqlPassword, /^[0-9a-f]{24}$/, 'postgresql password: 24 hex characters');
  t.match(v.redisPassword, /^[0-9a-f]{24}$/, 'redis password: 24 hex characters');
  t.not(v.postgresqlPassword, v.redisPassword, 'two different passwords');
}

function parseEnv(text: string): Values {
  const vars: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Z_]+)=(.*)$/.exec(line);
    if (!m) throw new Error(`not an env line: ${line}`);
    vars[m[1]!] = m[2]!;
  }
  if (Object.keys(vars).sort().join() !== 'AUTH_SECRET,ENCRYPTION_KEY,POSTGRESQL_PASSWORD,REDIS_PASSWORD') {
    throw new Error(`unexpected names: ${Object.keys(vars)}`);
  }
  return { encryptionKey: vars.ENCRYPTION_KEY!, authSecret: vars.AUTH_SECRET!, postgresqlPassword: vars.POSTGRESQL_PASSWORD!, redisPassword: vars.REDIS_PASSWORD! };
}

function parseTfvars(text: string): Values {
  const vars: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-z_]+)\s*=\s*"([^"\\$%]*)"$/.exec(line);
    if (!m) throw new Error(`not a tfvars line: ${line}`);
    vars[m[1]!] = m[2]!;
  }
  if (Object.keys(vars).sort().join() !== 'auth_secret,encryption_key,postgresql_password,redis_password') {
    throw new Error(`unexpected names: ${Object.keys(vars)}`);
  }
  return { encryptionKey: vars.encryption_key!, authSecret: vars.auth_secret!, postgresqlPassword: vars.postgresql_password!, redisPassword: vars.redis_password! };
}

function parseYaml(t: Test, text: string): Values {
  const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  const q = '"([^"\\\\]*)"';
  const shape = [
    /^secrets:$/,
    new RegExp(`^  encryptionKey: ${q}$`),
    new RegExp(`^  authSecret: ${q}$`),
    /^postgresql:$/,
    /^ {2}auth:$/,
    new RegExp(`^    password: ${q}$`),
    /^redis:$/,
    /^ {2}auth:$/,
    new RegExp(`^    password: ${q}$`),
  ];
  t.equal(lines.length, shape.length, 'exactly the documented lines');
  const m = shape.map((re, i) => re.exec(lines[i] ?? ''));
  m.forEach((x, i) => t.ok(x, `line ${i + 1} is ${shape[i]}`));
  return { encryptionKey: m[1]![1]!, authSecret: m[2]![1]!, postgresqlPassword: m[5]![1]!, redisPassword: m[8]![1]! };
}

t.test('each format parses back; values meet the rules; file 0600; values not printed', async (t) => {
  const dir = tempDir(t);
  const parsers = { env: parseEnv, tfvars: parseTfvars, yaml: (text: string) => parseYaml(t, text) };
  const keys = new Set<string>();
  for (const format of ['env', 'tfvars', 'yaml'] as const) {
    const file = join(dir, `bootstrap.${format}`);
    const r = await runCli(['generate-bootstrap', '--format', format, '--out', file], env);
    t.equal(r.code, 0, `${format}: exit 0 (${r.stderr})`);
    t.equal(statSync(file).mode & 0o777, 0o600, `${format}: mode 0600`);
    const text = readFileSync(file, 'utf8');
    const values = parsers[format](text);
    checkRules(t, values);
    for (const v of Object.values(values)) t.notOk((r.stdout + r.stderr).includes(v), `${format}: a value is not printed`);
    t.match(r.stdout, /gitignore/, `${format}: reminds to gitignore the file`);
    keys.add(values.encryptionKey);
  }
  t.equal(keys.size, 3, 'fresh random values each run');
});

t.test('an existing file is never overwritten', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'bootstrap.env');
  writeFileSync(file, 'ENCRYPTION_KEY=the-only-copy\n', { mode: 0o600 });
  const r = await runCli(['generate-bootstrap', '--format', 'env', '--out', file], env);
  t.equal(r.code, 1);
  t.match(r.stderr, /already exists; refusing to overwrite/);
  t.equal(readFileSync(file, 'utf8'), 'ENCRYPTION_KEY=the-only-copy\n', 'content unchanged');
});

t.test('--stdout prints the values; --out with --stdout is a usage error', async (t) => {
  const r = await runCli(['generate-bootstrap', '--format', 'env', '--stdout'], env);
  t.equal(r.code, 0);
  checkRules(t, parseEnv(r.stdout));
  const both = join(tempDir(t), 'x');
  const conflict = await runCli(['generate-bootstrap', '--stdout', '--out', both], env);
  t.equal(conflict.code, 2);
  t.match(conflict.stderr, /give --out FILE or --stdout, not both/);
  t.notOk(existsSync(both), 'no file written on a usage error');
  const bad = await runCli(['generate-bootstrap', '--format', 'xml', '--stdout'], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--format must be one of env, tfvars, yaml/);
  t.equal(bad.stdout, '', 'nothing generated on a usage error');
});

t.test('--help, the top-level help and unknown commands', async (t) => {
  const help = await runCli(['generate-bootstrap', '--help'], env);
  t.equal(help.code, 0);
  t.match(help.stdout, /Usage: vault-standalone generate-bootstrap/);
  t.match(help.stdout, /mode 0600/);
  const top = await runCli(['--help'], env);
  t.equal(top.code, 0);
  for (const c of ['generate-bootstrap', 'seed-inventory', 'rotate-key', 'audit-verify']) t.match(top.stdout, c);
  for (const c of ['seed-inventory', 'rotate-key', 'audit-verify']) {
    const r = await runCli([c, '--help'], env);
    t.equal(r.code, 0, `${c} --help exits 0`);
    t.match(r.stdout, `Usage: vault-standalone ${c}`);
  }
  t.equal((await runCli([], env)).code, 2, 'no command: usage, exit 2');
  const unknown = await runCli(['frobnicate'], env);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /unknown command: frobnicate/);
  t.equal((await runCli(['audit-verify', '--bogus'], env)).code, 2, 'unknown option: exit 2');
});

const hasGit = spawnSync('git', ['--version']).status === 0;

t.test('a file inside a git work tree: loud warning unless ignored', { skip: hasGit ? false : 'git not installed' }, async (t) => {
  const repo = tempDir(t, 'vault-cli-repo-');
  const g = spawnSync('git', ['init', '-q', repo]);
  t.equal(g.status, 0, 'git init in a temporary directory');
  writeFileSync(join(repo, '.gitignore'), 'ignored.env\n');

  const loud = await runCli(['generate-bootstrap', '--out', join(repo, 'bootstrap.env')], env);
  t.equal(loud.code, 0);
  t.match(loud.stderr, /WARNING: .*bootstrap\.env is inside a git work tree and NOT ignored/);

  const quiet = await runCli(['generate-bootstrap', '--out', join(repo, 'ignored.env')], env);
  t.equal(quiet.code, 0);
  t.notMatch(quiet.stderr, /WARNING/);
});

t.test('relative --out and the default file resolve against the caller\'s directory (INIT_CWD), not the package root', async (t) => {
  // `npm run cli` runs in the package root and passes the caller's directory as INIT_CWD.
  const caller = tempDir(t, 'vault-cli-caller-');
  const relative = `relative-${process.pid}.env`;
  const names = [relative, ...Object.values(DEFAULT_OUT)];
  const preexisting = new Set(names.filter((n) => existsSync(join(REPO, n))));
  t.teardown(() => {
    for (const n of names) if (!preexisting.has(n)) rmSync(join(REPO, n), { force: true });
  });
  const fromNpm = { ...env, INIT_CWD: caller };

  const r = await runCli(['generate-bootstrap', '--out', relative], fromNpm, REPO);
  t.equal(r.code, 0, r.stderr);
  t.equal(statSync(join(caller, relative)).mode & 0o777, 0o600, '--out FILE lands in the caller\'s directory');
  t.match(r.stdout, `wrote ${join(caller, relative)} `);

  for (const format of FORMATS) {
    const d = await runCli(['generate-bootstrap', '--format', format], fromNpm, REPO);
    t.equal(d.code, 0, `${format}: ${d.stderr}`);
    t.equal(statSync(join(caller, DEFAULT_OUT[format])).mode & 0o777, 0o600, `${format}: default ${DEFAULT_OUT[format]} in the caller's directory`);
  }
  for (const n of names) {
    if (!preexisting.has(n)) t.notOk(existsSync(join(REPO, n)), `${n}: nothing written in the package root`);
  }

  // Run directly (no npm, no INIT_CWD): the working directory.
  const direct = tempDir(t, 'vault-cli-direct-');
  const plain = await runCli(['generate-bootstrap', '--format', 'tfvars'], env, direct);
  t.equal(plain.code, 0, plain.stderr);
  t.ok(existsSync(join(direct, DEFAULT_OUT.tfvars)), 'without INIT_CWD: the working directory');
});

t.test('the default file names and Terraform variables/state are ignored by .gitignore and .dockerignore', async (t) => {
  const repo = tempDir(t, 'vault-cli-ignore-');
  t.equal(spawnSync('git', ['init', '-q', repo]).status, 0, 'git init in a temporary directory');
  copyFileSync(join(REPO, '.gitignore'), join(repo, '.gitignore'));
  const dockerignore = dockerignorePatterns(readFileSync(join(REPO, '.dockerignore'), 'utf8'));
  const files = [
    ...Object.values(DEFAULT_OUT),
    'prod.tfvars',
    'secrets.auto.tfvars',
    'terraform.tfstate',
    'terraform.tfstate.backup',
    '.terraform/providers/x',
    'vault.env',
  ];
  for (const dir of ['', 'chart/examples/terraform/', 'server/']) {
    for (const f of files) {
      const path = `${dir}${f}`;
      t.equal(spawnSync('git', ['-C', repo, 'check-ignore', '-q', '--', path]).status, 0, `.gitignore ignores ${path}`);
      t.ok(dockerignored(dockerignore, path), `.dockerignore excludes ${path}`);
    }
  }
  // The examples themselves stay tracked.
  for (const kept of ['chart/examples/terraform/main.tf', 'chart/examples/terraform/variables.tf', 'chart/examples/application.yaml']) {
    t.equal(spawnSync('git', ['-C', repo, 'check-ignore', '-q', '--', kept]).status, 1, `.gitignore keeps ${kept}`);
  }
});
