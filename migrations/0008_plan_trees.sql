-- Planning from the docs subtree (issue 10, build 3): the tree listings the last plan used, so the
-- next plan reads from GitHub only the trees whose SHA changed. Git trees are content-addressed:
-- a listing stored for a SHA stays true for that SHA forever, whatever happened since.

-- The tree SHA of the docs folder the last complete plan used (null when there is none). Cleared
-- together with head_commit_sha, tree_sha and head_etag when a plan was incomplete.
alter table repos add column docs_tree_sha text;

-- One row per directory the last plan listed: the root (path ''), the path segments of a docsPath
-- override, the .github and docs folders (CODEOWNERS candidates) and every directory of the docs
-- folder. `entries` is the directory's own listing in git order, kept to what selection can use
-- (trees, and files named like a document, README or CODEOWNERS):
-- [[name, mode, type, sha, size or null], ...].
create table plan_trees (
    repo_id  bigint not null references repos (id) on delete cascade,
    path     text not null check (path = '' or (left(path, 1) <> '/' and right(path, 1) <> '/')),
    sha      text not null check (sha ~ '^[0-9a-f]{40}$'),
    entries  jsonb not null check (jsonb_typeof(entries) = 'array'),
    primary key (repo_id, path)
);
