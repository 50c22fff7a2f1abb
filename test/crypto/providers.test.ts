// One conformance suite for every key provider: the root-key invariants of
// crypto/README.md, run through createCrypto (the worker path the service uses)
// against the local provider and against a PKCS#11 token (SoftHSM2). A new provider
// is added by one entry in PROVIDERS below, and must pass all of it.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type * as P from 'pkcs11js';
import { open } from '../../crypto/blob.js';
import { createCrypto, CryptoError, headerOf, type Crypto, type RootKeySpec } from '../../crypto/index.js';
import { Pkcs11KeyProvider } from '../../crypto/pkcs11.js';
import { codeOf } from './fixtures.js';
import { softhsmAvailable, softToken, SOFTHSM_MODULE } from '../helpers/softhsm.js';

// Real processes, tokens and worker pools on a shared 2-core machine: more than the default per-file budget.
t.setTimeout(360_000);

interface ProviderUnderTest {
  name: string;
  /** A new, independent root key of this provider; each call returns a fresh spec (PINs get zeroed). */
  newRootKey(t: Test): (version: number) => RootKeySpec;
}

const PROVIDERS: ProviderUnderTest[] = [
  {
    name: 'local',
    newRootKey: () => {
      const keyHex = randomBytes(16).toString('hex');
      return (version) => ({ provider: 'local', version, keyHex });
    },
  },
];
const hsm = softhsmAvailable();
if (hsm) {
  PROVIDERS.push({
    name: 'pkcs11 (SoftHSM2)',
    newRootKey: (t) => {
      const tok = softToken(t);
      return (version) => ({
        provider: 'pkcs11',
        version,
        module: tok.module,
        tokenLabel: tok.tokenLabel,
        keyLabel: tok.keyLabel,
        pin: Buffer.from(tok.pin),
      });
    },
  });
} else {
  t.comment(`SoftHSM2 not installed (${SOFTHSM_MODULE}): the PKCS#11 provider is not tested here`);
}

async function cryptoOf(t: Test, ...rootKeys: RootKeySpec[]): Promise<Crypto> {
  const c = await createCrypto({ rootKeys, threads: 1 });
  t.teardown(() => c.close());
  return c;
}

for (const p of PROVIDERS) {
  t.test(`provider conformance: ${p.name}`, async (t) => {
    const rootA = p.newRootKey(t);
    const rootB = p.newRootKey(t);
    const a = await cryptoOf(t, rootA(1));
    t.equal(a.rootKeyProvider, p.name.split(' ')[0]);

    t.test('wrap/unwrap round trip; the header carries the root key version', async (t) => {
      const wrapped = await a.generateDataKey('project:1');
      t.equal(headerOf(wrapped)?.keyVersion, 1);
      const [blob] = await a.sealMany(wrapped, 'project:1', [{ plaintext: 'sécret ✓', aad: 'row:1' }]);
      t.same(await a.openMany(wrapped, 'project:1', [{ blob: blob!, aad: 'row:1' }]), ['sécret ✓']);
      // Every wrap draws a fresh IV: the same key wrapped twice differs.
      t.not((await a.generateDataKey('project:1')).subarray(5, 17).toString('hex'), wrapped.subarray(5, 17).toString('hex'));
    });

    t.test('wrong associated data fails as UNWRAP_FAILED', async (t) => {
      const wrapped = await a.generateDataKey('project:1');
      t.equal(await codeOf(t, a.openMany(wrapped, 'project:2', [])), 'UNWRAP_FAILED');
      t.equal(await codeOf(t, a.mac(wrapped, 'project:2', 'x')), 'UNWRAP_FAILED');
    });

    t.test('a tampered wrapped key fails as UNWRAP_FAILED', async (t) => {
      const wrapped = await a.generateDataKey('k');
      for (const at of [0, 3, 10, 20, wrapped.length - 1]) {
        const bad = Buffer.from(wrapped);
        bad[at]! ^= 0x01;
        t.equal(await codeOf(t, a.mac(bad, 'k', 'x')), 'UNWRAP_FAILED', `bit flipped at ${at}`);
      }
      t.equal(await codeOf(t, a.mac(wrapped.subarray(0, 30), 'k', 'x')), 'UNWRAP_FAILED', 'truncated');
    });

    t.test('a data key of another root key fails as UNWRAP_FAILED (the start-up canary)', async (t) => {
      const b = await cryptoOf(t, rootB(1));
      const wrapped = await a.generateDataKey('system');
      const [canary] = await a.sealMany(wrapped, 'system', [{ plaintext: 'canary', aad: 'canary' }]);
      t.equal(await codeOf(t, b.openMany(wrapped, 'system', [{ blob: canary!, aad: 'canary' }])), 'UNWRAP_FAILED');
      // The same root key in a new instance (a restart) opens it.
      const again = await cryptoOf(t, rootA(1));
      t.same(await again.openMany(wrapped, 'system', [{ blob: canary!, aad: 'canary' }]), ['canary']);
    });

    for (const q of PROVIDERS) {
      t.test(`rotation to ${q.name}: the new root key alone opens, the old one alone does not`, async (t) => {
        const target = q.newRootKey(t);
        const wrapped = await a.generateDataKey('project:9');
        const [blob] = await a.sealMany(wrapped, 'project:9', [{ plaintext: 'kept', aad: 'row' }]);
        const before = await a.mac(wrapped, 'project:9', 'check');
        const rotating = await cryptoOf(t, target(2), rootA(1));
        t.equal(rotating.rootKeyVersion, 2);
        const rewrapped = await rotating.rewrap(wrapped, 'project:9', 2);
        t.equal(headerOf(rewrapped)?.keyVersion, 2);
        const newOnly = await cryptoOf(t, target(2));
        t.same(await newOnly.openMany(rewrapped, 'project:9', [{ blob: blob!, aad: 'row' }]), ['kept']);
        t.same(await newOnly.mac(rewrapped, 'project:9', 'check'), before, 'the same data key');
        t.equal(await codeOf(t, newOnly.openMany(wrapped, 'project:9', [])), 'UNWRAP_FAILED', 'the new key does not open the old wrap');
        t.equal(await codeOf(t, a.openMany(rewrapped, 'project:9', [])), 'UNWRAP_FAILED', 'the old key does not open the new wrap');
        // New data keys go to the current (target) version.
        t.equal(headerOf(await rotating.generateDataKey('n'))?.keyVersion, 2);
      });
    }
  });
}

t.test('pkcs11: the token wraps in the local blob format (same layout, same associated data)', { skip: !hsm }, async (t) => {
  // A key whose value the test knows, imported into the token: what the token wraps,
  // blob.open with that value opens, and the other way round.
  const tok = softToken(t, { withKey: false });
  const raw = randomBytes(32);
  const lib = createRequire(import.meta.url)('pkcs11js') as typeof P;
  const m = new lib.PKCS11();
  m.load(SOFTHSM_MODULE);
  try {
    m.C_Initialize({ flags: lib.CKF_OS_LOCKING_OK });
  } catch {
    // initialised already in this process
  }
  const slot = m.C_GetSlotList(true).find((s) => m.C_GetTokenInfo(s).label.replace(/[\s\0]+$/, '') === tok.tokenLabel)!;
  const session = m.C_OpenSession(slot, lib.CKF_SERIAL_SESSION | lib.CKF_RW_SESSION);
  try {
    m.C_Login(session, lib.CKU_USER, tok.pin);
  } catch {
    // logged in already
  }
  m.C_CreateObject(session, [
    { type: lib.CKA_CLASS, value: lib.CKO_SECRET_KEY },
    { type: lib.CKA_KEY_TYPE, value: lib.CKK_AES },
    { type: lib.CKA_VALUE, value: raw },
    { type: lib.CKA_LABEL, value: 'known' },
    { type: lib.CKA_TOKEN, value: true },
    { type: lib.CKA_SENSITIVE, value: true },
    { type: lib.CKA_EXTRACTABLE, value: false },
    { type: lib.CKA_ENCRYPT, value: true },
    { type: lib.CKA_DECRYPT, value: true },
  ]);
  const provider = Pkcs11KeyProvider.open({ module: SOFTHSM_MODULE, tokenLabel: tok.tokenLabel, keyLabel: 'known' }, Buffer.from(tok.pin), 7);
  const dk = randomBytes(32);
  const wrapped = provider.wrap(dk, 'project:x');
  t.equal(headerOf(wrapped)?.keyVersion, 7);
  t.same(open((v) => (v === 7 ? raw : undefined), wrapped, 'project:x'), dk, 'blob.open with the raw key opens the token\'s wrap');
  t.equal(open((v) => (v === 7 ? raw : undefined), wrapped, 'project:y'), null, 'bound to the aad');
  const { seal } = await import('../../crypto/blob.js');
  t.same(provider.unwrap(seal(raw, 7, dk, 'project:x'), 'project:x'), dk, 'the token opens a blob.seal wrap');
});

t.test('pkcs11: start-up fails closed with one line naming the setting', { skip: !hsm }, async (t) => {
  const tok = softToken(t);
  const fresh = softToken(t); // never logged in: a wrong PIN is checked by the token
  const base = (over: Partial<Extract<RootKeySpec, { provider: 'pkcs11' }>>): RootKeySpec => ({
    provider: 'pkcs11',
    version: 1,
    module: tok.module,
    tokenLabel: tok.tokenLabel,
    keyLabel: tok.keyLabel,
    pin: Buffer.from(tok.pin),
    ...over,
  });
  const cases: Array<[string, RootKeySpec, RegExp]> = [
    ['wrong PIN', base({ tokenLabel: fresh.tokenLabel, keyLabel: fresh.keyLabel, pin: Buffer.from('not-the-pin') }), /^PKCS11_PIN: the token refused the PIN \(CKR_PIN_INCORRECT\)$/],
    ['missing token', base({ tokenLabel: 'no-such-token' }), /^PKCS11_TOKEN_LABEL: no token labelled 'no-such-token' is present$/],
    ['missing slot', base({ tokenLabel: undefined, slot: 424242 }), /^PKCS11_SLOT: no token is present in slot 424242$/],
    ['missing key', base({ keyLabel: 'no-such-key' }), /^PKCS11_KEY_LABEL: no key labelled 'no-such-key' in token '.*' \(create it with: vault-standalone hsm-init\)$/],
    ['module that will not load', base({ module: '/nonexistent/libpkcs11.so' }), /^PKCS11_MODULE: cannot load the PKCS#11 library \/nonexistent\/libpkcs11.so$/],
    ['rotate-key target', base({ module: '/nonexistent/libpkcs11.so', settingPrefix: 'NEW_' }), /^NEW_PKCS11_MODULE: /],
  ];
  for (const [name, spec, message] of cases) {
    const pin = (spec as { pin: Uint8Array }).pin;
    try {
      const c = await createCrypto({ rootKeys: [spec], threads: 2 });
      await c.close();
      t.fail(`${name}: started`);
    } catch (err) {
      t.ok(err instanceof CryptoError && err.code === 'KEY_UNAVAILABLE', `${name}: KEY_UNAVAILABLE`);
      t.match((err as Error).message, message, name);
      t.notOk((err as Error).message.includes(tok.pin), `${name}: no PIN in the message`);
      t.notOk((err as Error).message.includes('\n'), `${name}: one line`);
    }
    t.ok(pin.every((b) => b === 0), `${name}: the caller's PIN bytes are zeroed`);
  }
});

t.test('pkcs11: a token removed while running: 503 for new data keys, cached keys keep serving, nothing crashes', { skip: !hsm }, async (t) => {
  const tok = softToken(t);
  const c = await cryptoOf(t, { provider: 'pkcs11', version: 1, module: tok.module, tokenLabel: tok.tokenLabel, keyLabel: tok.keyLabel, pin: Buffer.from(tok.pin) });
  const wrapped = await c.generateDataKey('p');
  const [blob] = await c.sealMany(wrapped, 'p', [{ plaintext: 'still here', aad: 'r' }]);
  tok.remove();
  t.teardown(() => tok.restore());
  t.equal(await codeOf(t, c.generateDataKey('q')), 'KEY_UNAVAILABLE', 'a new data key: KEY_UNAVAILABLE (the service answers 503)');
  t.same(await c.openMany(wrapped, 'p', [{ blob: blob!, aad: 'r' }]), ['still here'], 'a cached key still opens');
  t.same((await c.sealMany(wrapped, 'p', [{ plaintext: 'new', aad: 'r2' }])).length, 1, 'and still seals');
  t.equal(await codeOf(t, c.generateDataKey('q')), 'KEY_UNAVAILABLE', 'still unavailable, not crashed');
});
