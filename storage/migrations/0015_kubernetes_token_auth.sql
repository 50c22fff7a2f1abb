-- Kubernetes Auth and Token Auth of machine identities (Infisical's kubernetes-auth and
-- token-auth). One row per identity and method, like identity_jwt_auths.

-- Kubernetes Auth: a service-account token is verified with the cluster's TokenReview
-- API. The reviewer JWT is a credential: it is stored only sealed (AES-256-GCM under a
-- data key of its own, crypto_keys purpose 'identity', bound to the identity by its
-- associated data) and never answered. The CA certificate is public material, as is.
alter table crypto_keys drop constraint crypto_keys_purpose_check;
alter table crypto_keys add constraint crypto_keys_purpose_check check (purpose in ('system', 'project', 'audit', 'identity'));

create table identity_kubernetes_auths (
  identity_id uuid primary key references identities (id) on delete cascade,
  -- https://host[:port] (no path); the TokenReview endpoint is appended.
  kubernetes_host text not null,
  -- PEM: the CA the API server's certificate chains to ('' = system CAs).
  ca_cert text not null default '',
  -- The data key the reviewer JWT is sealed under (one per row; deleted with the row).
  data_key_id uuid not null references crypto_keys (id),
  -- null: the caller's own token reviews itself (Infisical's "no reviewer JWT").
  token_reviewer_jwt bytea,
  -- Infisical's form: comma-separated values, each exact or a glob.
  allowed_namespaces text not null default '',
  allowed_names text not null default '',
  allowed_audience text not null default '',
  access_token_ttl integer not null default 2592000 check (access_token_ttl > 0),
  access_token_max_ttl integer not null default 2592000 check (access_token_max_ttl > 0),
  access_token_num_uses_limit integer not null default 0 check (access_token_num_uses_limit >= 0),
  access_token_trusted_ips jsonb not null
    default '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The row's data key goes with the row (removed, or its identity deleted).
create function identity_kubernetes_auths_drop_key() returns trigger language plpgsql as $$
begin
  delete from crypto_keys where id = old.data_key_id and purpose = 'identity';
  return old;
end $$;
create trigger identity_kubernetes_auths_drop_key after delete on identity_kubernetes_auths
  for each row execute function identity_kubernetes_auths_drop_key();

-- Token Auth: access tokens an administrator mints for the identity, with these TTLs,
-- use limit and trusted IPs.
create table identity_token_auths (
  identity_id uuid primary key references identities (id) on delete cascade,
  access_token_ttl integer not null default 2592000 check (access_token_ttl > 0),
  access_token_max_ttl integer not null default 2592000 check (access_token_max_ttl > 0),
  access_token_num_uses_limit integer not null default 0 check (access_token_num_uses_limit >= 0),
  access_token_trusted_ips jsonb not null
    default '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- Tokens of both methods; a Token Auth token carries the name its administrator gave it.
alter table identity_access_tokens drop constraint identity_access_tokens_auth_method_check;
alter table identity_access_tokens
  add constraint identity_access_tokens_auth_method_check
    check (auth_method in ('universal-auth', 'jwt-auth', 'oidc-auth', 'kubernetes-auth', 'token-auth')),
  add column name text not null default '';
create index identity_access_tokens_token_auth on identity_access_tokens (identity_id, created_at) where auth_method = 'token-auth';
