-- A person the superadmin disabled: refused at login, holds no session (disabling
-- deletes their session rows). Null: enabled.
alter table users add column disabled_at timestamptz;
