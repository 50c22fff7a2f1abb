-- Administrator login attempts, counted per e-mail address whether or not an account
-- has it, so a lockout tells nobody which addresses exist. Keyed by an HMAC of the
-- normalised address: addresses that belong to nobody are not kept in clear.
-- users.failed_logins / users.locked_until are no longer read; they stay so that a
-- replica of the previous version keeps working during a rolling update.
create table login_attempts (
  email_key bytea primary key,
  attempts integer not null,
  last_attempt_at timestamptz not null
);
create index login_attempts_last_attempt on login_attempts (last_attempt_at);
