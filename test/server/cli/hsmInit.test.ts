// hsm-init: creates the root key in a token that has none, refuses to replace one,
// and names the setting when the token refuses (SoftHSM2).
import t from 'tap';
import { softhsmAvailable, softToken, SOFTHSM_MODULE } from '../../helpers/softhsm.js';
import { runCli } from './helpers.js';

// Real processes, tokens and worker pools on a shared 2-core machine: more than the default per-file budget.
t.setTimeout(360_000);

if (!softhsmAvailable()) {
  t.comment(`SoftHSM2 not installed (${SOFTHSM_MODULE}): skipped`);
  process.exit(0);
}

t.test('creates the key once, then refuses to replace it', async (t) => {
  const tok = softToken(t, { withKey: false });
  const env = { ...tok.env, SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! };
  const first = await runCli(['hsm-init'], env);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, new RegExp(`created the root key 'vault-root' in token '${tok.tokenLabel}' \\(AES-256, sensitive, non-extractable\\)`));
  t.notOk(first.stdout.includes(tok.pin) || first.stderr.includes(tok.pin), 'no PIN printed');
  // The second run finds it, checks it (AES-256, sensitive, not extractable) and changes nothing.
  const second = await runCli(['hsm-init'], env);
  t.equal(second.code, 1);
  t.match(second.stderr, /a key labelled 'vault-root' exists already in token '.*': refusing to replace it \(nothing changed\)/);
  // The service's provider accepts it: generateDataKey works in a real process.
  const third = await runCli(['hsm-init'], { ...env, PKCS11_KEY_LABEL: 'other-label' });
  t.equal(third.code, 0, 'another label is another key');
});

t.test('refusals name the setting', async (t) => {
  const tok = softToken(t, { withKey: false });
  const env = { ...tok.env, SOFTHSM2_CONF: process.env.SOFTHSM2_CONF! };
  const pin = await runCli(['hsm-init'], { ...env, PKCS11_PIN_FILE: '', PKCS11_PIN: 'wrong' });
  t.equal(pin.code, 1);
  t.match(pin.stderr, /PKCS11_PIN: the token refused the PIN \(CKR_PIN_INCORRECT\)/);
  const token = await runCli(['hsm-init'], { ...env, PKCS11_TOKEN_LABEL: 'absent' });
  t.match(token.stderr, /PKCS11_TOKEN_LABEL: no token labelled 'absent' is present/);
  const missing = await runCli(['hsm-init'], { SOFTHSM2_CONF: env.SOFTHSM2_CONF });
  t.equal(missing.code, 1);
  t.match(missing.stderr, /PKCS11_MODULE is required/);
  const argv = await runCli(['hsm-init', `--pin=${tok.pin}`], env);
  t.not(argv.code, 0, 'a PIN-like argument is refused');
});
