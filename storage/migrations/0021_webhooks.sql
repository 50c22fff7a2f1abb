-- Webhooks (issue 30 point 4): Infisical's webhooks, delivered from the event table (an
-- outbox). The target URL and the signing key are credentials: stored only sealed
-- (AES-256-GCM under a data key of the webhook's own, crypto_keys purpose 'webhook',
-- bound to the webhook by their associated data), never logged, never audited.
alter table crypto_keys drop constraint crypto_keys_purpose_check;
alter table crypto_keys add constraint crypto_keys_purpose_check check (purpose in ('system', 'project', 'audit', 'identity', 'webhook'));

create table webhooks (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  environment_id uuid not null references environments (id) on delete cascade,
  -- A folder path or a glob (Infisical's picomatch form).
  secret_path text not null default '/',
  type text not null default 'general' check (type in ('general', 'slack', 'microsoft-teams')),
  -- Infisical's filteredEvents: event names; empty = every subscribable event.
  events_filter jsonb not null default '[]',
  is_disabled boolean not null default false,
  data_key_id uuid not null references crypto_keys (id),
  url_blob bytea not null,
  -- null: no signing key (no x-infisical-signature header, as Infisical).
  key_blob bytea,
  -- The outbox cursor: every event of the project up to this id is handled for this webhook.
  cursor bigint not null default 0,
  -- Delivery state. last_status: Infisical's 'success' | 'failed'.
  last_status text check (last_status in ('success', 'failed')),
  last_error text,
  last_http_status integer,
  last_attempt_at timestamptz,
  -- The highest event id delivered (acknowledged by a 2xx).
  last_event_id bigint,
  -- The delivery pending now: its first event, since when it fails, its failed attempts.
  pending_event_id bigint,
  pending_since timestamptz,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  -- Retried past WEBHOOK_RETRY_PERIOD_SECONDS: parked until the webhook is enabled again.
  dead_at timestamptz,
  -- A replica's claim on the webhook while it delivers (FOR UPDATE SKIP LOCKED, then a lease).
  lease_token uuid,
  lease_until timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhooks_project on webhooks (project_id);

-- The row's data key goes with the row (deleted, or its project or environment deleted).
create function webhooks_drop_key() returns trigger language plpgsql as $$
begin
  delete from crypto_keys where id = old.data_key_id and purpose = 'webhook';
  return old;
end $$;
create trigger webhooks_drop_key after delete on webhooks
  for each row execute function webhooks_drop_key();
