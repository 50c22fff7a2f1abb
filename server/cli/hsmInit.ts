// hsm-init: creates the root key in a PKCS#11 token when it is missing, and never
// replaces one. The key is AES-256, generated inside the token, CKA_SENSITIVE and not
// CKA_EXTRACTABLE, usable only to encrypt and decrypt (the data keys it wraps).
import { initPkcs11RootKey, ProviderConfigError } from '../../crypto/index.js';
import { ConfigError, parseKeySettings } from '../config.js';
import { CliError, EXIT_FAILURE, EXIT_OK, parse, refuseKeyLikeArguments, type Command, type Context } from './command.js';

const HELP = `Usage: vault-standalone hsm-init

Creates the service's root key in a PKCS#11 token (an HSM, a smart card, a cloud
KMS's PKCS#11 library) when no key with PKCS11_KEY_LABEL exists there: AES-256,
generated in the token, sensitive and non-extractable. Refuses to replace a key
that exists (exit 1, nothing changed): a new key would not open existing data.

Environment (the service's own; never arguments):
  PKCS11_MODULE                       path of the token's PKCS#11 library
  PKCS11_TOKEN_LABEL or PKCS11_SLOT   the token
  PKCS11_PIN or PKCS11_PIN_FILE       the user PIN
  PKCS11_KEY_LABEL                    the key's label (default vault-standalone-root)

To move an existing instance onto the new key, run rotate-key with NEW_KEY_PROVIDER=pkcs11
(see docs/operations.md).

Exit codes: 0 created, 1 a key exists already or the token refused, 2 usage error.`;

export const hsmInit: Command = {
  name: 'hsm-init',
  summary: 'create the root key in a PKCS#11 token (never replaces one)',
  help: HELP,
  async run(argv: string[], { env, io }: Context): Promise<number> {
    refuseKeyLikeArguments(argv);
    const o = parse(argv, {});
    if (o.help) {
      io.out(HELP);
      return EXIT_OK;
    }
    let settings;
    try {
      settings = parseKeySettings({ ...env, KEY_PROVIDER: 'pkcs11' });
    } catch (err) {
      if (err instanceof ConfigError) throw new CliError(err.message.replace(' when KEY_PROVIDER=pkcs11', ''));
      throw err;
    }
    const p = settings.pkcs11!;
    try {
      const r = initPkcs11RootKey({ module: p.module, tokenLabel: p.tokenLabel, slot: p.slot, keyLabel: p.keyLabel }, p.pin);
      if (!r.created) {
        io.err(`a key labelled '${p.keyLabel}' exists already in token '${r.tokenLabel}': refusing to replace it (nothing changed)`);
        return EXIT_FAILURE;
      }
      io.out(`created the root key '${p.keyLabel}' in token '${r.tokenLabel}' (AES-256, sensitive, non-extractable)`);
      io.out('Next: start the service with KEY_PROVIDER=pkcs11 (a new instance), or move an existing one with');
      io.out('  vault-standalone rotate-key, NEW_KEY_PROVIDER=pkcs11 and NEW_PKCS11_* (see docs/operations.md).');
      return EXIT_OK;
    } catch (err) {
      if (err instanceof ProviderConfigError) throw new CliError(err.message);
      throw err;
    } finally {
      p.pin.fill(0);
    }
  },
};
