-- The audit chain becomes keyed and anchored (storage/audit.ts).
--
-- Entry hashes become HMACs under a dedicated data key (crypto_keys purpose 'audit'),
-- which the service generates at its first start after this migration: a migration
-- never calls crypto/, so rows already written cannot be re-chained here. They keep
-- their plain SHA-256 hashes and are marked chain = 1; entries written with the key
-- are chain = 2. The anchor created with the key pins how many chain = 1 entries
-- there are and where the chain ended, so they cannot be removed, edited, re-hashed
-- or added to afterwards without breaking it.

alter table crypto_keys drop constraint crypto_keys_purpose_check;
alter table crypto_keys add constraint crypto_keys_purpose_check check (purpose in ('system', 'project', 'audit'));
-- One audit key per instance, even with replicas starting together.
create unique index crypto_keys_one_audit_key on crypto_keys (purpose) where purpose = 'audit';

-- No default afterwards: a writer that does not know the keyed chain (an older replica
-- still running during an upgrade) fails to append, so its change does not happen.
alter table audit_log add column chain smallint not null default 1 check (chain in (1, 2));
alter table audit_log alter column chain drop default;

-- The chain's head, rewritten with every append in the same transaction and MACed
-- with the audit key: a deleted tail no longer verifies as a shorter chain.
create table audit_chain_head (
  id integer primary key check (id = 1),
  key_id uuid not null references crypto_keys (id),
  entries bigint not null,
  legacy_entries bigint not null,
  last_id bigint not null,
  last_mac bytea not null,
  mac bytea not null
);
