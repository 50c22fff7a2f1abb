// crypto/ imports only node built-ins, piscina, @node-rs/argon2, pkcs11js (optional, loaded
// only for a PKCS#11 root key) and its own files.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('../../../crypto/', import.meta.url)); // from dist/test/crypto/
const allowed = new Set(['piscina', '@node-rs/argon2', 'pkcs11js']);
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g;

t.test('every import of crypto/ is allowed', async (t) => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));
  t.ok(files.includes('index.ts') && files.includes('worker.ts'), 'found the sources');
  for (const file of files) {
    const src = readFileSync(dir + file, 'utf8');
    for (const [, spec] of src.matchAll(SPECIFIER)) {
      const ok =
        spec!.startsWith('node:') ||
        builtinModules.includes(spec!) ||
        allowed.has(spec!) ||
        /^\.\/[\w.-]+\.js$/.test(spec!);
      t.ok(ok, `${file}: ${spec}`);
    }
  }
});
