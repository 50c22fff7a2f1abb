-- Privilege held in the database is MACed under a key the database does not hold
-- (storage/privilege.ts): the client-secret MAC key, i.e. the system key the canary is
-- sealed with (crypto_keys purpose 'system', wrapped by the root key). Each row names
-- the key version that MACed it. A row without a MAC, or whose MAC does not hold under
-- the key it names, grants nothing: the superadmin flag and password hash of a person,
-- a membership's role, a custom role's permissions.
--
-- A migration never calls crypto/: rows already written are MACed by the service's
-- first start after this migration, once (server/domain/integrity.ts), in the same
-- transaction that seals the canary's second version, which records that the upgrade
-- happened (and which audit entries predate the keyed chain). No foreign key to
-- crypto_keys: a row naming a retired key version simply does not verify.
alter table users add column privilege_mac bytea, add column privilege_mac_key_id uuid;
alter table project_memberships add column mac bytea, add column mac_key_id uuid;
alter table project_roles add column mac bytea, add column mac_key_id uuid;
