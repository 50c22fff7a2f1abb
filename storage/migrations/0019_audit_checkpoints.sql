-- Keyed checkpoints of the audit chain (storage/audit.ts verifyIncremental): "entries up
-- to id last_id verified, the chain's head there last_mac, its running digest digest",
-- MACed under the audit key (key_id names the version), which the database does not
-- hold. A verify continues from the newest one instead of walking the whole trail; one
-- whose MAC does not hold is reported like a broken chain. `pruned` is how many entries
-- before the online chain were archived and deleted (audit retention): a checkpoint with
-- pruned = entries marks the prune boundary the online chain starts from.
create table audit_checkpoints (
  last_id bigint primary key,
  key_id uuid not null,
  entries bigint not null,
  legacy_entries bigint not null,
  last_mac bytea not null,
  digest bytea not null,
  pruned bigint not null default 0,
  made_at timestamptz not null default now(),
  mac bytea not null
);
