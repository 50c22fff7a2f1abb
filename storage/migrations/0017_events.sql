-- Change events (issue 30): what a committed change did to a project's secrets, written in
-- the change's own transaction, for SSE subscribers (and webhooks) to read in order.
-- Names, paths and keys only: never a value, a value's hash, a token or a key.

-- Per project: the last event id given out (ids are 1, 2, 3, … per project; the row is
-- locked by the change that bumps it until it commits, so ids become visible in order),
-- and the highest id pruned (a subscriber behind it must re-read: `resync`).
create table project_event_seq (
  project_id uuid primary key references projects (id) on delete cascade,
  last_id bigint not null default 0,
  pruned_id bigint not null default 0
);

create table events (
  project_id uuid not null references projects (id) on delete cascade,
  id bigint not null,
  type text not null check (type in ('secret:create', 'secret:update', 'secret:delete', 'secret:import-mutation')),
  environment text not null,
  secret_path text not null,
  -- JSON array of secret names ([] for an import mutation).
  secret_keys jsonb not null default '[]',
  actor_type text not null,
  actor_id text,
  created_at timestamptz not null default now(),
  primary key (project_id, id)
);
create index events_created_at on events (created_at);
