-- Temporary access on project memberships (Infisical's isTemporary / temporaryMode /
-- temporaryRange / temporaryAccessStartTime): a role that ends by itself. The start and
-- end times are covered by the row's MAC (storage/privilege.ts membershipMessage), so
-- someone who writes the database cannot move the end of a grant. A permanent
-- membership keeps them null (and its MAC message is the one it had before).
--
-- expiry_audited_at: when the audit trail recorded the grant's end (a periodic sweep,
-- server/domain/memberships.ts recordExpiries). Not privilege: it grants nothing, so it
-- is not MACed; the end is enforced at use, whether or not it has been audited yet.
alter table project_memberships
  add column temporary_mode text,
  add column temporary_range text,
  add column temporary_access_start_time timestamptz,
  add column temporary_access_end_time timestamptz,
  add column expiry_audited_at timestamptz,
  add constraint project_memberships_temporary check (
    (temporary_access_end_time is null and temporary_mode is null and temporary_range is null and temporary_access_start_time is null)
    or (temporary_access_end_time is not null and temporary_mode = 'relative' and temporary_range is not null
        and temporary_access_start_time is not null and temporary_access_end_time > temporary_access_start_time)
  );
create index project_memberships_unaudited_expiry on project_memberships (temporary_access_end_time)
  where temporary_access_end_time is not null and expiry_audited_at is null;
