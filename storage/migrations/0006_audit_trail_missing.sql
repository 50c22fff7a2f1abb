-- An anchor created while the instance already held projects, identities or people but
-- no audit trail (it was deleted, with its key and anchor) records that at its genesis.
-- The flag is covered by the anchor's MAC (storage/audit.ts headMessage): it cannot be
-- cleared without the audit key, and verify reports such a chain as broken.
alter table audit_chain_head add column trail_missing boolean not null default false;
