// Static checks of the Dockerfile and .dockerignore (no Docker engine here): base
// image, non-root user, port, health check, what is copied from where, no secrets.
import t from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { dockerignorePatterns, dockerignored as ignored, readRepo, repoHas, ROOT } from '../chart/lib.js';

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** Logical instructions: comments dropped, `\` continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  let start = 0;
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line.startsWith('#')) continue; // comment (also inside a continuation, as Docker does)
    if (line === '' && buf === '') continue;
    if (buf === '') start = i + 1;
    if (line.endsWith('\\')) {
      buf += `${line.slice(0, -1).trim()} `;
      continue;
    }
    buf += line;
    const m = /^([A-Za-z]+)\s+([\s\S]*)$/.exec(buf.trim());
    if (!m) throw new Error(`line ${start}: cannot parse ${buf}`);
    out.push({ op: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
    buf = '';
  }
  if (buf !== '') throw new Error('dangling line continuation');
  return out;
}

interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

function stages(instructions: Instruction[]): Stage[] {
  const out: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`bad FROM: ${ins.args}`);
      out.push({ from: m[1]!, name: m[2], instructions: [] });
    } else {
      if (out.length === 0) {
        if (ins.op === 'ARG') continue;
        throw new Error(`${ins.op} before FROM`);
      }
      out[out.length - 1]!.instructions.push(ins);
    }
  }
  return out;
}

/** COPY/ADD: flags, sources and destination (shell or JSON form). */
function copyParts(args: string): { flags: Record<string, string>; sources: string[]; dest: string } {
  const flags: Record<string, string> = {};
  let rest = args;
  for (let m; (m = /^--([a-z-]+)(?:=(\S+))?\s+/.exec(rest)); rest = rest.slice(m[0].length)) flags[m[1]!] = m[2] ?? 'true';
  const parts = rest.startsWith('[') ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
  if (parts.length < 2) throw new Error(`COPY needs a source and a destination: ${args}`);
  return { flags, sources: parts.slice(0, -1), dest: parts[parts.length - 1]! };
}

const dockerfile = readRepo('Dockerfile');
const instructions = parseDockerfile(dockerfile);
const all = stages(instructions);
const build = all.find((s) => s.name === 'build');
const runtime = all[all.length - 1]!;
const ops = (s: Stage | undefined, op: string) => (s?.instructions ?? []).filter((i) => i.op === op);
const dockerignore = dockerignorePatterns(readRepo('.dockerignore'));

t.test('parsers', async (t) => {
  const ins = parseDockerfile('# c\nFROM a AS b\nRUN x \\\n  # inner comment\n  && y\nCOPY ["a b", "c"]\n');
  t.same(ins.map((i) => [i.op, i.args]), [
    ['FROM', 'a AS b'],
    ['RUN', 'x && y'],
    ['COPY', '["a b", "c"]'],
  ]);
  t.same(copyParts('--from=build --chown=1:1 /app/a /app/b ./'), { flags: { from: 'build', chown: '1:1' }, sources: ['/app/a', '/app/b'], dest: './' });
  t.same(copyParts('["a b", "c"]').sources, ['a b']);
  t.ok(ignored(['node_modules'], 'node_modules/x/y'));
  t.ok(ignored(['**/node_modules'], 'a/node_modules'));
  t.ok(ignored(['*.log'], 'npm.log'));
  t.notOk(ignored(['*.log'], 'a/npm.log'), '* does not cross folders');
  t.notOk(ignored(['dist'], 'storage/dist-notes'));
  t.notOk(ignored(['data'], 'storage/migrations'));
  t.ok(ignored(['**/*.tfstate.*'], 'a/terraform.tfstate.backup'), 'a * after an escaped dot');
  t.notOk(ignored(['*.tfstate.*'], 'terraform.tfstate'));
  t.ok(ignored(['**/vault-bootstrap*'], 'vault-bootstrap.env'), '**/ also matches at the root');
  t.ok(ignored(['a/**/b'], 'a/x/y/b'));
  t.notOk(ignored(['a?c'], 'a/c'), '? does not match a slash');
});

t.test('stages: build and runtime on node:20-bookworm-slim', async (t) => {
  t.equal(all.length, 2);
  t.ok(build, 'a stage named build');
  t.equal(build?.from, 'node:20-bookworm-slim');
  t.equal(runtime.from, 'node:20-bookworm-slim', 'runtime stage');
  t.not(runtime.name, 'build');
});

t.test('build stage: npm ci, npm run build (server and UI), prune dev dependencies', async (t) => {
  const runs = ops(build, 'RUN').map((i) => i.args);
  const idx = (re: RegExp) => runs.findIndex((r) => re.test(r));
  t.ok(idx(/^npm ci\b/) >= 0, 'npm ci');
  t.ok(idx(/^npm run build$/) > idx(/^npm ci\b/), 'npm run build after npm ci');
  t.ok(idx(/^npm prune --omit=dev\b/) > idx(/^npm run build$/), 'npm prune --omit=dev after the build');
  const copies = ops(build, 'COPY').map((i) => i.args);
  const buildAt = build!.instructions.findIndex((i) => i.op === 'RUN' && /^npm run build$/.test(i.args));
  const uiAt = build!.instructions.findIndex((i) => i.op === 'COPY' && /^ui \.\/ui$/.test(i.args));
  t.ok(copies.includes('ui ./ui'), 'the UI sources are copied in');
  t.ok(uiAt >= 0 && uiAt < buildAt, 'before npm run build, which builds ui/dist');
  const pkg = JSON.parse(readRepo('package.json')) as { scripts: Record<string, string> };
  // The build script runs scripts/build-if-stale.mjs --build, which runs vite on the UI's config, then tsc.
  t.match(pkg.scripts.build, /^node scripts\/build-if-stale\.mjs --build$/, 'npm run build is the build script');
  t.match(readRepo('scripts', 'build-if-stale.mjs'), /\['vite', 'build', '--config', 'ui\/vite\.config\.ts'/, 'which builds the UI');
  t.equal(ops(build, 'WORKDIR')[0]?.args, '/app');
});

t.test('runtime stage: user 1001 in group nodejs (1001), /data volume, env, port', async (t) => {
  const runs = ops(runtime, 'RUN').map((i) => i.args).join('\n');
  t.match(runs, /groupadd [^\n&]*--gid 1001 nodejs\b/, 'group nodejs with gid 1001');
  t.match(runs, /useradd [^\n&]*--uid 1001 --gid nodejs\b/, 'user uid 1001 in nodejs');
  t.match(runs, /chown 1001:1001 \/data\b/);
  t.same(ops(runtime, 'USER').map((i) => i.args), ['1001:1001']);
  t.equal(ops(runtime, 'USER').length, 1);
  const lastUser = runtime.instructions.findIndex((i) => i.op === 'USER');
  t.notOk(runtime.instructions.slice(lastUser).some((i) => i.op === 'RUN'), 'nothing runs after switching user (no root leftovers later)');
  t.same(ops(runtime, 'EXPOSE').map((i) => i.args), ['8080']);
  t.same(ops(runtime, 'VOLUME').map((i) => i.args), ['["/data"]']);
  const env = ops(runtime, 'ENV').map((i) => i.args).join(' ');
  t.match(env, /\bNODE_ENV=production\b/);
  t.match(env, /\bDATA_DIR=\/data\b/);
  t.match(env, /\bPORT=8080\b/);
  t.equal(ops(runtime, 'WORKDIR')[0]?.args, '/app');
});

/** Runs the health check's script as the image would, against `port` given as PORT. */
function runProbe(script: string, env: Record<string, string>): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
    child.on('close', (code) => resolve(code));
  });
}

t.test('HEALTHCHECK: node fetch of /api/status on $PORT (default 8080), no curl', async (t) => {
  const hc = ops(runtime, 'HEALTHCHECK');
  t.equal(hc.length, 1);
  const m = /^(?:--\S+\s+)*CMD (\[.*\])$/.exec(hc[0]?.args ?? '');
  t.ok(m, 'exec form: CMD [...]');
  const argv = JSON.parse(m?.[1] ?? '[]') as string[];
  t.same(argv.slice(0, 2), ['node', '-e']);
  const script = argv[2] ?? '';
  t.match(script, /process\.env\.PORT\|\|8080/, 'PORT, else 8080');
  t.notOk(instructions.some((i) => /\b(curl|wget)\b/.test(i.args)), 'no curl/wget in any instruction');

  // The script itself, against a local server standing in for the service on another port.
  let status = 200;
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? '');
    res.writeHead(status, { 'content-type': 'application/json' }).end('{"message":"Ok"}');
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  t.teardown(() => server.close());
  const port = String((server.address() as AddressInfo).port);
  t.not(port, '8080');
  t.equal(await runProbe(script, { PORT: port }), 0, 'healthy: exit 0 on the PORT given');
  t.same(paths, ['/api/status'], 'asks GET /api/status');
  status = 503;
  t.equal(await runProbe(script, { PORT: port }), 1, 'unhealthy answer: exit 1');
  server.close();
  await once(server, 'close');
  t.equal(await runProbe(script, { PORT: port }), 1, 'nothing listening: exit 1');
});

t.test('CMD starts the compiled server, as package.json does (less its memory flag)', async (t) => {
  t.same(ops(runtime, 'CMD').map((i) => JSON.parse(i.args)), [['node', 'dist/server/main.js']]);
  const pkg = JSON.parse(readRepo('package.json')) as { scripts: Record<string, string> };
  // npm start adds only the embedded default's young-generation cap; the container, most
  // often on PostgreSQL, keeps V8's default (README, the embedded database's memory).
  t.equal(pkg.scripts.start, 'node --max-semi-space-size=2 dist/server/main.js');
  t.match(readRepo('scripts', 'build-if-stale.mjs'), /\['tsc', '-p', 'tsconfig\.json'\]/, 'the build (npm run build: scripts/build-if-stale.mjs --build) compiles to dist/');
  t.notOk(ops(runtime, 'ENTRYPOINT').length, 'no ENTRYPOINT wrapper');
});

t.test('server/main.ts (the CMD target) is in the sources', async (t) => {
  t.ok(repoHas('server', 'main.ts'));
});

t.test('COPY from the build context: every source exists and is not ignored', async (t) => {
  const contextCopies = all.flatMap((s) => ops(s, 'COPY').concat(ops(s, 'ADD'))).filter((i) => !/--from=/.test(i.args));
  t.ok(contextCopies.length >= 4);
  t.notOk(ops(runtime, 'ADD').length, 'no ADD');
  for (const ins of contextCopies) {
    for (const src of copyParts(ins.args).sources) {
      t.notMatch(src, /^(\.|\.\/|\*)$/, `line ${ins.line}: no whole-context copy`);
      t.ok(repoHas(src), `line ${ins.line}: ${src} exists in the repository`);
      t.notOk(ignored(dockerignore, src), `line ${ins.line}: ${src} is not excluded by .dockerignore`);
    }
  }
  t.notOk(ops(runtime, 'COPY').some((i) => !/--from=build\b/.test(i.args)), 'the runtime stage copies only from the build stage');
});

t.test('COPY --from=build: exactly the runtime files, each produced by the build', async (t) => {
  // What the build stage leaves under /app: context copies plus what its RUN steps make.
  const copiedIn = ops(build, 'COPY').flatMap((i) => copyParts(i.args).sources.map((s) => s.replace(/\/$/, '')));
  const produced: Record<string, RegExp> = {
    dist: /^npm run build$/, // tsc outDir
    node_modules: /^npm ci\b/,
    'ui/dist': /^npm run build$/, // vite build of ui/ (package.json "build")
  };
  const buildRuns = ops(build, 'RUN').map((i) => i.args);
  const sources = ops(runtime, 'COPY').flatMap((i) => copyParts(i.args).sources);
  t.same(
    [...sources].sort(),
    ['/app/dist', '/app/node_modules', '/app/package-lock.json', '/app/package.json', '/app/storage/migrations', '/app/ui/dist'],
    'copies only dist, production node_modules, package files, migrations (and the UI build)',
  );
  for (const src of sources) {
    t.ok(src.startsWith('/app/'), `${src} is under the build WORKDIR`);
    const rel = src.slice('/app/'.length);
    const fromContext = copiedIn.some((c) => rel === c || rel.startsWith(`${c}/`));
    const byRun = produced[rel] !== undefined && buildRuns.some((r) => produced[rel]!.test(r));
    t.ok(fromContext || byRun, `${rel} is copied into or produced by the build stage`);
    if (fromContext) t.ok(repoHas(rel), `${rel} exists in the repository`);
  }
});

t.test('migrations are where the compiled code reads them', async (t) => {
  const sql = readdirSync(join(ROOT, 'storage', 'migrations')).filter((f) => f.endsWith('.sql'));
  t.ok(sql.length >= 1, 'storage/migrations holds SQL files');
  // dist/storage/migrate.js resolves ../../storage/migrations => /app/storage/migrations.
  t.match(readRepo('storage', 'migrate.ts'), /'\.\.\/\.\.\/storage\/migrations\/', import\.meta\.url\)/);
  t.match(dockerfile, /^COPY --from=build \/app\/storage\/migrations \.\/storage\/migrations$/m);
});

t.test('no secrets baked in', async (t) => {
  for (const ins of instructions.filter((i) => i.op === 'ENV' || i.op === 'ARG')) {
    t.notMatch(ins.args, /KEY|SECRET|PASSWORD|TOKEN|CREDENTIAL/i, `line ${ins.line}: ${ins.op} ${ins.args}`);
  }
  t.notMatch(dockerfile, /^[^#\n]*(ENCRYPTION_KEY|AUTH_SECRET|DATABASE_URL|REDIS_URL)=/m, 'no bootstrap value assigned anywhere');
  t.notOk(instructions.some((i) => (i.op === 'COPY' || i.op === 'ADD') && /dev-keys|\.env\b|tfvars/.test(i.args)), 'no env or variables file copied');
});

t.test('.dockerignore', async (t) => {
  for (const p of ['node_modules', 'dist', 'data', '.git', '.tap', 'test-artifacts', 'test', '.env', '*.log']) {
    t.ok(dockerignore.includes(p), `excludes ${p}`);
  }
  t.ok(ignored(dockerignore, 'data/dev-keys.env'), 'development keys never reach the context');
  t.ok(ignored(dockerignore, 'storage/node_modules'), 'nested node_modules');
  t.notOk(dockerignore.some((p) => p.startsWith('!')), 'no re-includes (the matcher here does not model them)');
});
