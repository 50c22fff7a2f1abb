-- Online re-keying (vault-standalone rekey while the service serves).
--
-- Every sealed row names the data key that sealed it, so rows under a project's old
-- and new data keys coexist while a re-key runs. The foreign key is what makes "the old
-- data key is destroyed only when no row uses it" hold: deleting a crypto_keys row that
-- a secret or a version still names fails (and a writer that sealed under a key holds
-- it against deletion until it commits).
alter table secrets add column data_key_id uuid references crypto_keys (id);
alter table secret_versions add column data_key_id uuid references crypto_keys (id);

update secrets s set data_key_id = p.data_key_id
  from folders f join environments e on e.id = f.environment_id join projects p on p.id = e.project_id
  where f.id = s.folder_id;
update secret_versions v set data_key_id = p.data_key_id
  from folders f join environments e on e.id = f.environment_id join projects p on p.id = e.project_id
  where f.id = v.folder_id;

-- No default: a writer that does not name the key it sealed with (an older replica
-- during a rolling update) fails to write rather than leaving an unreadable row.
alter table secrets alter column data_key_id set not null;
alter table secret_versions alter column data_key_id set not null;
create index secrets_data_key on secrets (data_key_id);
create index secret_versions_data_key on secret_versions (data_key_id);

-- While a project is being re-keyed: the key its rows are moving away from. New values
-- are sealed under data_key_id; the re-key moves the rest, then clears this and deletes
-- the key.
alter table projects add column previous_data_key_id uuid references crypto_keys (id);

-- The client-secret MAC key is versioned: each client secret names the key its hash was
-- made with (a system key; the current one is the canary's, see server/domain/keyring.ts).
-- A login verifies under that version and re-MACs under the current one; rekey deletes an
-- old version once no client secret names it.
alter table identity_client_secrets add column mac_key_id uuid references crypto_keys (id);
update identity_client_secrets set mac_key_id = (select key_id from crypto_canary where id = 1);
alter table identity_client_secrets alter column mac_key_id set not null;
create index identity_client_secrets_mac_key on identity_client_secrets (mac_key_id);

-- The audit key is versioned: each keyed entry records the key that MACed it (not under
-- its MAC: see storage/audit.ts verifyChain). A rekey writes a checkpoint entry under the
-- new key that holds the chain's digest so far, then deletes the old key in the same
-- transaction; entries of a destroyed version are verified against that digest. No
-- foreign key: the version is recorded after its key is gone.
alter table audit_log add column key_id uuid;
update audit_log set key_id = (select key_id from audit_chain_head where id = 1) where chain = 2;
alter table audit_log add constraint audit_log_keyed_has_key check (chain = 1 or key_id is not null);
-- The rekey replaces the audit key row (one per instance) and moves the anchor to it in
-- one transaction: the anchor's reference is checked at the commit.
alter table audit_chain_head alter constraint audit_chain_head_key_id_fkey deferrable initially immediate;
