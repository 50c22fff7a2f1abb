-- JWT and OIDC auth of machine identities (Infisical's jwt-auth and oidc-auth): a
-- signed identity token (a Kubernetes service-account token, a CI job's OIDC token) is
-- exchanged for an access token, with no static secret. One row per identity and
-- method. Public keys, JWKS URLs and CA certificates are public material, stored as is.
create table identity_jwt_auths (
  identity_id uuid not null references identities (id) on delete cascade,
  method text not null check (method in ('jwt-auth', 'oidc-auth')),
  -- jwt-auth: 'static' (public_keys) or 'jwks' (jwks_url); null for oidc-auth.
  configuration_type text check (configuration_type in ('static', 'jwks')),
  jwks_url text not null default '',
  public_keys jsonb not null default '[]',
  -- oidc-auth: the issuer's base URL (/.well-known/openid-configuration is appended).
  oidc_discovery_url text not null default '',
  -- PEM: the CA the JWKS / discovery server's certificate chains to ('' = system CAs).
  ca_cert text not null default '',
  bound_issuer text not null default '',
  -- Infisical's form: comma-separated values, each exact or a glob.
  bound_audiences text not null default '',
  bound_claims jsonb not null default '{}',
  bound_subject text not null default '',
  access_token_ttl integer not null default 2592000 check (access_token_ttl > 0),
  access_token_max_ttl integer not null default 2592000 check (access_token_max_ttl > 0),
  access_token_num_uses_limit integer not null default 0 check (access_token_num_uses_limit >= 0),
  access_token_trusted_ips jsonb not null
    default '[{"ipAddress":"0.0.0.0","type":"ipv4","prefix":0},{"ipAddress":"::","type":"ipv6","prefix":0}]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (identity_id, method),
  check ((method = 'jwt-auth') = (configuration_type is not null))
);

-- An access token names the method that issued it; only Universal Auth tokens name a
-- client secret. A token is live only while its method is still attached (and, for
-- Universal Auth, its client secret is not revoked): storage/identities.ts liveAccessToken.
alter table identity_access_tokens
  alter column client_secret_id drop not null,
  add column auth_method text not null default 'universal-auth'
    check (auth_method in ('universal-auth', 'jwt-auth', 'oidc-auth')),
  add constraint identity_access_tokens_method_secret
    check ((auth_method = 'universal-auth') = (client_secret_id is not null));
