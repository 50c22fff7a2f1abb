-- Secret imports: a folder (folder_id) that also answers the secrets of another folder of
-- the same project, named by environment and path as Infisical stores it (a source folder
-- renamed away leaves the import pointing at nothing, which reads as no secrets).
-- position orders a folder's imports (1, 2, …): on a single read the last import holding
-- a key wins, as in Infisical. No value is stored here.
create table secret_imports (
  id uuid primary key,
  folder_id uuid not null references folders (id) on delete cascade,
  import_env_id uuid not null references environments (id) on delete cascade,
  import_path text not null,
  position integer not null check (position > 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (folder_id, import_env_id, import_path)
);
create index secret_imports_folder on secret_imports (folder_id, position);
create index secret_imports_source on secret_imports (import_env_id, import_path);
