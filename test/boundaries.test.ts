// The house's import rules that ESLint's relative-path patterns (eslint.config.js) do not
// cover: which npm packages each layer may use. Static: reads the sources, starts nothing.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

/** The checkout's root, whether this runs from dist/test or straight from test/. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}
const root = repoRoot();

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)));
}

/** Every module specifier a file imports (static and dynamic), type-only imports excluded. */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^'";]*?from\s+['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  for (const m of text.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) found.push(m[1]!);
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!);
  return found;
}

const packageOf = (spec: string) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);

const rules: { dir: string; packages: string[]; why: string }[] = [
  { dir: 'crypto', packages: ['piscina', '@node-rs/argon2', 'pkcs11js'], why: 'crypto/ imports only node built-ins, piscina, argon2 and (for KEY_PROVIDER=pkcs11) pkcs11js' },
  { dir: 'storage', packages: ['postgres', 'ioredis', '@electric-sql/pglite'], why: 'storage/ talks to PostgreSQL and Redis only' },
  { dir: 'ui/src', packages: ['solid-js', '@solidjs/router'], why: 'the UI is a Solid app that talks HTTP' },
];

for (const rule of rules) {
  t.test(rule.why, async (t) => {
    const files = sources(rule.dir);
    t.ok(files.length > 0, `${rule.dir} has sources`);
    const offending: string[] = [];
    for (const file of files) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.') || spec.startsWith('node:')) continue;
        if (!rule.packages.includes(packageOf(spec))) offending.push(`${file}: ${spec}`);
      }
    }
    t.same(offending, [], 'no other package');
  });
}

t.test('the scanner sees imports (it can fail)', async (t) => {
  t.ok(importsOf('crypto/index.ts').some((s) => s === 'piscina' || s.startsWith('./')), 'crypto/index.ts imports something');
});
