-- Reserved: migration 0007 belongs to another branch of this round of changes. This
-- no-op keeps the numbering gap-free on this branch alone; drop it at merge in favour
-- of the real 0007.
select 1;
