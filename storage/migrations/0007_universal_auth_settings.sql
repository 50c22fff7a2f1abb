-- Universal Auth settings that Infisical's API accepts and this service now applies:
-- trusted IP ranges for logins (client secrets) and for access tokens, and a use limit
-- for access tokens (0 = unlimited). IP lists are stored as Infisical shapes them:
-- [{"ipAddress": "10.0.0.0", "type": "ipv4", "prefix": 8}, ...] (no prefix = one address).
alter table identity_universal_auth
  add column client_secret_trusted_ips jsonb not null
    default '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]',
  add column access_token_trusted_ips jsonb not null
    default '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]',
  add column access_token_num_uses_limit integer not null default 0 check (access_token_num_uses_limit >= 0),
  -- Failed logins count only while the last one is younger than the lockout window:
  -- failed_logins is read together with this time (storage/identities.ts claimLogin).
  -- locked_until is no longer read; it stays for a replica of the previous version
  -- during a rolling update.
  add column last_failed_login_at timestamptz;

-- The limit is copied onto each token when it is issued (as Infisical does), and its
-- uses are counted by one statement per request.
alter table identity_access_tokens
  add column num_uses integer not null default 0,
  add column num_uses_limit integer not null default 0 check (num_uses_limit >= 0);
