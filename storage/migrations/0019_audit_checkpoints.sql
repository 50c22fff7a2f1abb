-- Keyed checkpoints of the audit chain (storage/auditCheckpoints.ts): "entries up to id
-- last_id verified, the chain's head there last_mac, its running digest digest", MACed
-- under the audit key (key_id names the version), which the database does not hold. A
-- verify continues from the newest one instead of walking the whole trail; one whose MAC
-- does not hold is reported like a broken chain. Each names the one before it
-- (prev_last_id, under the MAC), so the background full walk finds a deleted one.
-- `pruned` is how many entries before the online chain were archived and deleted (audit
-- retention): a checkpoint with pruned = entries marks the prune boundary the online
-- chain starts from.
create table audit_checkpoints (
  last_id bigint primary key,
  prev_last_id bigint not null default 0,
  key_id uuid not null,
  entries bigint not null,
  legacy_entries bigint not null,
  last_mac bytea not null,
  digest bytea not null,
  pruned bigint not null default 0,
  made_at timestamptz not null default now(),
  mac bytea not null
);
-- One successor per checkpoint: two replicas appending at once cannot fork the chain.
create unique index audit_checkpoints_prev on audit_checkpoints (prev_last_id);

-- The latest background full walk of the chain (server/domain/auditVerifier.ts): when,
-- how much it read, its verdict; MACed under the audit key, so a database writer cannot
-- turn a broken verdict into an "ok" (an older valid row put back is caught by the
-- replica that wrote the newer one, and replaced by the next walk).
create table audit_verify_runs (
  id smallint primary key default 1 check (id = 1),
  run_id uuid not null,
  key_id uuid not null,
  started_at timestamptz not null,
  finished_at timestamptz not null,
  ok boolean not null,
  entries bigint not null,
  read bigint not null,
  checkpoints integer not null,
  newest_checkpoint bigint not null,
  broken_at bigint,
  reason text,
  detail text not null,
  mac bytea not null
);
