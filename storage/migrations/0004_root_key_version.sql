-- The root key version every data key must be wrapped under. rotate-key changes it in
-- the transaction that re-wraps every key; a process that read the version before a
-- rotation committed (a replica started during it) can then no longer add a data key
-- under the old version: the foreign key refuses the insert, instead of leaving a key
-- the new ENCRYPTION_KEY cannot unwrap. Deferrable so that the rotation can move the
-- version and the keys within one transaction.
create table crypto_root_key (
  id integer primary key check (id = 1),
  version integer not null unique check (version >= 1)
);

insert into crypto_root_key (id, version)
  select 1, coalesce(max(root_key_version), 1) from crypto_keys;

alter table crypto_keys add constraint crypto_keys_root_key_current
  foreign key (root_key_version) references crypto_root_key (version)
  deferrable initially immediate;
