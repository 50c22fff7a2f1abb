-- A tag's display name apart from its slug (Infisical's tag `name`, which Terraform's
-- infisical_project_tag sets: {name, color, slug}). Tags made before keep name = slug,
-- the name every answer showed for them. No value is stored here.
alter table secret_tags add column name text;
update secret_tags set name = slug;
alter table secret_tags alter column name set not null;
