-- Custom project roles made of rules (Infisical's permissions, subject 'secrets'):
-- which actions, in which environment (or any) and under which secret-path glob, allowed
-- or denied (deny wins). `version` is bumped by every change so compiled rules can be
-- cached per role version. A membership holds either a built-in role, or 'custom' and
-- the custom role's id; a role still assigned cannot be deleted (the foreign key, checked
-- at the end of the statement, so a project's delete takes its roles and memberships together).
create table project_roles (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  slug text not null,
  name text not null,
  description text,
  permissions jsonb not null default '[]',
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, slug),
  unique (project_id, id)
);

alter table project_memberships drop constraint project_memberships_role_check;
alter table project_memberships add constraint project_memberships_role_check
  check (role in ('admin', 'member', 'viewer', 'no-access', 'custom'));
alter table project_memberships add column custom_role_id uuid;
-- The role must be one of the membership's own project.
alter table project_memberships add constraint project_memberships_custom_role_fk
  foreign key (project_id, custom_role_id) references project_roles (project_id, id);
alter table project_memberships add constraint project_memberships_custom_role_check
  check ((role = 'custom') = (custom_role_id is not null));
