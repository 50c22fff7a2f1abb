// KEY_PROVIDER=pkcs11: a service that cannot use its token refuses to start, with one
// line naming the setting (real processes, against SoftHSM2 and PostgreSQL).
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { softhsmAvailable, softToken, SOFTHSM_MODULE } from '../helpers/softhsm.js';
import { start, tempDir } from '../helpers/spawnService.js';

// Real processes, tokens and worker pools on a shared 2-core machine: more than the default per-file budget.
t.setTimeout(360_000);

if (!softhsmAvailable()) {
  t.comment(`SoftHSM2 not installed (${SOFTHSM_MODULE}): skipped`);
  process.exit(0);
}

t.test('refuses to start, with one line naming the setting', async (t) => {
  const tok = softToken(t);
  const fresh = softToken(t);
  const noKey = softToken(t, { withKey: false });
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['wrong PIN', { ...fresh.env, PKCS11_PIN_FILE: '', PKCS11_PIN: 'wrong-pin' }, /^PKCS11_PIN: the token refused the PIN \(CKR_PIN_INCORRECT\)$/],
    ['missing token', { ...tok.env, PKCS11_TOKEN_LABEL: 'gone' }, /^PKCS11_TOKEN_LABEL: no token labelled 'gone' is present$/],
    ['missing key', noKey.env, /^PKCS11_KEY_LABEL: no key labelled 'vault-root' in token '.+' \(create it with: vault-standalone hsm-init\)$/],
    ['bad module', { ...tok.env, PKCS11_MODULE: '/usr/lib/x86_64-linux-gnu/libc.so.6' }, /^PKCS11_MODULE: cannot load the PKCS#11 library /],
  ];
  // In parallel, each against its own PostgreSQL database (the embedded one starts slowly).
  const runs = await Promise.all(cases.map(async ([, env]) => start({ ...env, DATA_DIR: tempDir(t), DATABASE_URL: await freshDatabase(t) }).exit));
  for (const [i, [name, , line]] of cases.entries()) {
    const r = runs[i]!;
    t.equal(r.code, 1, `${name}: exit 1`);
    const lines = r.stderr.trim().split('\n');
    t.equal(lines.length, 1, `${name}: one line`);
    t.match(lines[0], line, name);
  }
});

t.test('another token\'s key does not open this database: refuses to start', async (t) => {
  const a = softToken(t);
  const b = softToken(t);
  const dir = tempDir(t);
  const db = await freshDatabase(t);
  const first = start({ ...a.env, DATA_DIR: dir, DATABASE_URL: db });
  await first.output(/listening on/);
  first.kill();
  t.equal((await first.exit).code, 0);
  const second = await start({ ...b.env, DATA_DIR: dir, DATABASE_URL: db }).exit;
  t.equal(second.code, 1);
  t.match(second.stderr, /^PKCS11_KEY_LABEL: the token's key does not match the root key this database was encrypted with/);
});

