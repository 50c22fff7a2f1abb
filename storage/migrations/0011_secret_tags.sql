-- Project tags (Infisical's secret tags: a slug and a colour) and which secrets carry
-- them. A tag's slug is unique in its project; deleting a tag or a secret deletes the
-- links. No value is stored here.
create table secret_tags (
  id uuid primary key,
  project_id uuid not null references projects (id) on delete cascade,
  slug text not null,
  color text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (project_id, slug)
);

create table secret_tag_links (
  secret_id uuid not null references secrets (id) on delete cascade,
  tag_id uuid not null references secret_tags (id) on delete cascade,
  primary key (secret_id, tag_id)
);
create index secret_tag_links_tag on secret_tag_links (tag_id);
