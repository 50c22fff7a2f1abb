-- Initial schema. Invariant: no column holds a secret value, comment or key in
-- plaintext; values live only in *_blob columns sealed by crypto/, data keys only
-- wrapped by the root key (see storage/README.md).

create table crypto_keys (
  id uuid primary key,
  purpose text not null check (purpose in ('system', 'project')),
  root_key_version integer not null,
  wrapped bytea not null,
  created_at timestamptz not null default now()
);

-- One row, sealed at first start: opening it proves ENCRYPTION_KEY is the key the
-- data was written with.
create table crypto_canary (
  id integer primary key check (id = 1),
  key_id uuid not null references crypto_keys (id),
  blob bytea not null,
  created_at timestamptz not null default now()
);

create table organizations (
  id uuid primary key,
  name text not null,
  slug text not null unique,
  created_at timestamptz not null default now()
);

create table users (
  id uuid primary key,
  email text not null,
  password_hash text not null,
  first_name text not null default '',
  last_name text not null default '',
  is_superadmin boolean not null default false,
  failed_logins integer not null default 0,
  locked_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_lower on users (lower(email));

create table projects (
  id uuid primary key,
  org_id uuid not null references organizations (id),
  name text not null,
  slug text not null unique,
  data_key_id uuid not null references crypto_keys (id),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table environments (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  name text not null,
  slug text not null,
  position integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, slug)
);

-- path is the normalised absolute path ('/', '/my-app', '/my-app/db'); version is
-- bumped in the same transaction as any change to the folder's secrets, so caches
-- can be stamped with it.
create table folders (
  id uuid primary key,
  environment_id uuid not null references environments (id) on delete cascade,
  parent_id uuid references folders (id) on delete cascade,
  name text not null,
  path text not null,
  version bigint not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (environment_id, path)
);

create table secrets (
  id uuid primary key,
  folder_id uuid not null references folders (id) on delete cascade,
  key text not null,
  version integer not null default 1,
  value_blob bytea not null,
  comment_blob bytea,
  skip_multiline_encoding boolean not null default false,
  immutable boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (folder_id, key)
);

create table secret_versions (
  id uuid primary key,
  secret_id uuid not null references secrets (id) on delete cascade,
  folder_id uuid not null references folders (id) on delete cascade,
  key text not null,
  version integer not null,
  value_blob bytea not null,
  comment_blob bytea,
  actor_type text not null,
  actor_id text,
  created_at timestamptz not null default now(),
  unique (secret_id, version)
);

create table identities (
  id uuid primary key,
  org_id uuid not null references organizations (id),
  name text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table identity_universal_auth (
  identity_id uuid primary key references identities (id) on delete cascade,
  client_id uuid not null unique,
  access_token_ttl integer not null default 2592000 check (access_token_ttl > 0),
  access_token_max_ttl integer not null default 2592000 check (access_token_max_ttl > 0),
  failed_logins integer not null default 0,
  locked_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- secret_hash is a keyed MAC (crypto/ mac task) of the 64-hex client secret;
-- the secret itself is shown once and never stored.
create table identity_client_secrets (
  id uuid primary key,
  identity_id uuid not null references identities (id) on delete cascade,
  prefix text not null,
  secret_hash bytea not null,
  description text not null default '',
  ttl integer not null default 0,
  num_uses integer not null default 0,
  num_uses_limit integer not null default 0,
  is_revoked boolean not null default false,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index identity_client_secrets_identity on identity_client_secrets (identity_id);

create table identity_access_tokens (
  id uuid primary key,
  identity_id uuid not null references identities (id) on delete cascade,
  client_secret_id uuid not null references identity_client_secrets (id) on delete cascade,
  expires_at timestamptz not null,
  max_expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index identity_access_tokens_identity on identity_access_tokens (identity_id);
create index identity_access_tokens_secret on identity_access_tokens (client_secret_id);
create index identity_access_tokens_expiry on identity_access_tokens (expires_at);

create table project_memberships (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  identity_id uuid references identities (id) on delete cascade,
  user_id uuid references users (id) on delete cascade,
  role text not null check (role in ('admin', 'member', 'viewer', 'no-access')),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((identity_id is null) <> (user_id is null)),
  unique (project_id, identity_id),
  unique (project_id, user_id)
);

-- Hash-chained: hash = sha256(prev_hash || canonical(entry)). Never holds a value.
create table audit_log (
  id bigserial primary key,
  at timestamptz not null default now(),
  actor_type text not null,
  actor_id text,
  event_type text not null,
  project_id uuid,
  environment text,
  secret_path text,
  secret_key text,
  secret_version integer,
  metadata jsonb not null default '{}'::jsonb,
  ip text,
  prev_hash bytea not null,
  hash bytea not null
);
create index audit_log_project_at on audit_log (project_id, at desc);
