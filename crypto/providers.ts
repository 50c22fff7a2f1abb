// The one place a worker builds its key provider, from the configuration its init
// task carried. Secrets (ENCRYPTION_KEY bytes, a PKCS#11 PIN) arrive in one buffer
// moved to this thread; each root key names its slice. The caller zeroes the buffer.
//
// A new provider (a cloud KMS, Vault Transit) is one class implementing KeyProvider,
// one case here, and a pass of test/crypto/providers.test.ts.
import { ENCRYPTION_KEY_BYTES, CompositeKeyProvider, LocalKeyProvider, type KeyProvider } from './keyProvider.js';
import { Pkcs11KeyProvider, type Pkcs11Settings } from './pkcs11.js';

/** One root key version as the init task describes it (no secret in here: see `secret`). */
export type RootKeyConfig =
  | { provider: 'local'; version: number; secret: [offset: number, length: number] }
  | ({ provider: 'pkcs11'; version: number; secret: [offset: number, length: number] } & Pkcs11Settings);

export const PROVIDERS = ['local', 'pkcs11'] as const;
export type ProviderKind = (typeof PROVIDERS)[number];

function slice(secrets: Uint8Array, [offset, length]: [number, number]): Uint8Array {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0 || offset + length > secrets.byteLength) {
    throw new RangeError('secret out of range');
  }
  return secrets.subarray(offset, offset + length);
}

/** Throws ProviderConfigError (one line naming the setting) or RangeError (a malformed task). */
export function buildProvider(roots: readonly RootKeyConfig[], currentVersion: number, secrets: Uint8Array): KeyProvider {
  if (!Array.isArray(roots) || roots.length === 0) throw new RangeError('no root key');
  const parts: KeyProvider[] = [];
  const local = roots.filter((r) => r.provider === 'local');
  if (local.length > 0) {
    const keys = local.map((r) => {
      const bytes = slice(secrets, r.secret);
      if (bytes.byteLength !== ENCRYPTION_KEY_BYTES) throw new RangeError('encryption key must be 16 bytes');
      return { version: r.version, encryptionKey: bytes };
    });
    // The local provider holds every local version; its "current" is the newest of them
    // unless the current version is local.
    const localCurrent = local.some((r) => r.version === currentVersion) ? currentVersion : local[0]!.version;
    parts.push(new LocalKeyProvider(keys, localCurrent));
  }
  for (const r of roots) {
    if (r.provider === 'local') continue;
    if (r.provider !== 'pkcs11') throw new RangeError('unknown key provider');
    const settings: Pkcs11Settings = {
      module: String(r.module),
      keyLabel: String(r.keyLabel),
      settingPrefix: typeof r.settingPrefix === 'string' ? r.settingPrefix : '',
      ...(r.tokenLabel !== undefined ? { tokenLabel: String(r.tokenLabel) } : { slot: Number(r.slot) }),
    };
    parts.push(Pkcs11KeyProvider.open(settings, slice(secrets, r.secret), r.version));
  }
  if (parts.length === 1) {
    if (parts[0]!.currentVersion !== currentVersion) throw new RangeError('current root key version is not loaded');
    return parts[0]!;
  }
  return new CompositeKeyProvider(parts, currentVersion);
}
