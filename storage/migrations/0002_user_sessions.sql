-- Browser and API sessions of people. The JWT carries the id; logout revokes the row.
create table user_sessions (
  id uuid primary key,
  user_id uuid not null references users (id) on delete cascade,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  ip text,
  created_at timestamptz not null default now()
);
create index user_sessions_user on user_sessions (user_id);
