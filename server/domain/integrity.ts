// The one start that upgrades an instance to privilege MACs and the instance record.
//
// An instance whose canary is the first version's was written by an older version: its
// privilege rows (people, memberships, custom roles) carry no MAC, and which audit entries
// predate the keyed chain was never recorded under a key. This start, once, in one
// transaction: records the legacy part of the trail, MACs every privilege row under the
// current MAC key, and seals the canary's second version holding that record. From then
// on the canary says the upgrade happened; a writer of the database cannot make it say
// otherwise (sealing a first-version canary needs the root key), so cannot have every row
// MACed again nor legacy entries accepted anew. What it can do: put back a first-version
// canary it copied before the upgrade (SECURITY.md: a rekey after the upgrade, then
// rotate-key, ends that).
import type { Crypto } from '../../crypto/index.js';
import type { Store } from '../../storage/index.js';
import { currentMacKey, macPrivilegeRows } from '../../storage/privilege.js';
import { AUDIT_TRAIL_ANCHOR_INVALID, AUDIT_TRAIL_ANCHOR_MISSING, AuditTrailError, loadAuditKey } from './audit.js';
import { CANARY_AAD, canaryText, dataKeyAad, privilegeKeyOf, recordOf, WrongEncryptionKeyError, type InstanceRecord, type Keyring } from './keyring.js';

/**
 * The instance record: the canary's, or, on an instance not upgraded yet, the one this
 * call makes (once; replicas starting together wait on the canary's lock and read it).
 * `onUpgrade` hears how many privilege rows were MACed.
 */
export async function instanceRecord(
  store: Store,
  crypto: Crypto,
  keyring: Pick<Keyring, 'record'>,
  onUpgrade?: (done: { record: InstanceRecord; privilegeRows: number }) => void,
): Promise<InstanceRecord> {
  if (keyring.record) return keyring.record;
  let upgraded: { record: InstanceRecord; privilegeRows: number } | undefined;
  const record = await store.transaction(async (s) => {
    const canary = await s.keys.canaryForUpdate();
    const systemKey = canary && (await s.keys.get(canary.keyId));
    if (!canary || !systemKey) throw new Error('the canary is missing: it was deleted while the service started');
    const [text] = await crypto.openMany(systemKey.wrapped, dataKeyAad(systemKey.id), [{ blob: canary.blob, aad: CANARY_AAD }]);
    const done = recordOf(text!);
    if (done === undefined) throw new WrongEncryptionKeyError(crypto.rootKeyProvider);
    if (done) return done; // Another replica upgraded it meanwhile.
    // Which entries predate the keyed chain: those the anchor pins, or, where the chain was
    // never keyed (no anchor, no audit key), all of them. An anchor deleted with its key
    // still there is refused as openAuditKey refuses it: nothing is recorded.
    await s.audit.lockChain(s.tx);
    if (await s.audit.anchor()) {
      // What the anchor pins is believed only under its MAC.
      if (!(await s.audit.anchorHolds(await loadAuditKey(s, crypto)))) throw new AuditTrailError(AUDIT_TRAIL_ANCHOR_INVALID);
    } else if (await s.keys.audit()) {
      throw new AuditTrailError(AUDIT_TRAIL_ANCHOR_MISSING);
    }
    const legacy = await s.audit.legacyPart(s.tx);
    const current = await currentMacKey(s.tx);
    const { maced } = await macPrivilegeRows(s.tx, privilegeKeyOf(crypto), current, { onlyValid: false });
    const made: InstanceRecord = { origin: 'upgraded', legacy };
    const [blob] = await crypto.sealMany(systemKey.wrapped, dataKeyAad(systemKey.id), [{ plaintext: canaryText(made), aad: CANARY_AAD }]);
    await s.keys.replaceCanary(systemKey.id, blob!);
    upgraded = { record: made, privilegeRows: maced };
    return made;
  });
  if (upgraded) onUpgrade?.(upgraded);
  return record;
}
