-- Every access token and session carries a random secret part besides its row id; the
-- row keeps only the secret's SHA-256 (server/auth/tokens.ts). A row without one (issued
-- before this version, or by a replica of the previous version during a rolling update)
-- matches no token: its holder logs in again.
alter table identity_access_tokens add column secret_hash bytea;
alter table user_sessions add column secret_hash bytea;

-- Machine (Universal Auth) login failures, counted per identity and source (the client's
-- address; an IPv6 /64), so a stranger's guesses from elsewhere never lock out the
-- identity's own clients. identity_universal_auth.failed_logins / last_failed_login_at
-- are no longer read; they stay for a replica of the previous version during a rolling
-- update. Rows that no longer count are swept (storage/identities.ts sweepLoginFailures).
create table identity_login_failures (
  identity_id uuid not null references identities (id) on delete cascade,
  source text not null,
  failed_logins integer not null,
  last_failed_login_at timestamptz,
  primary key (identity_id, source)
);
create index identity_login_failures_last on identity_login_failures (last_failed_login_at);
