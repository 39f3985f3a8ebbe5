-- Issue 31 point 6 (images in the console).
--
-- An image a synced document references is fetched from the repository at the synced commit the
-- first time someone reads it (with the installation token) and kept here by blob SHA, so the
-- console shows it from the sync API's own origin.
--
-- `image_blobs`: one row per image file content (git blob SHA), at most `MAX_IMAGE_BYTES`, its
-- type found from its bytes. `document_images`: what one reference of one document came to at one
-- commit (found, missing, too large or not an image type), so a later view answers from one row.
-- Rows of other commits than a repository's synced one are deleted when the next one is recorded.
create table image_blobs (
    blob_sha     text primary key check (blob_sha ~ '^[0-9a-f]{40}$'),
    content_type text not null,
    bytes        bytea not null,
    size_bytes   integer not null check (size_bytes >= 0),
    stored_at    timestamptz not null default now()
);

create table document_images (
    repo_id     bigint not null references repos (id) on delete cascade,
    commit_sha  text not null check (commit_sha ~ '^[0-9a-f]{40}$'),
    doc_path    text not null,
    src         text not null,
    image_path  text not null,
    outcome     text not null check (outcome in ('found', 'missing', 'too_large', 'unsupported')),
    blob_sha    text references image_blobs (blob_sha) on delete cascade,
    checked_at  timestamptz not null default now(),
    primary key (repo_id, commit_sha, doc_path, src),
    check ((outcome = 'found') = (blob_sha is not null))
);
create index document_images_path_idx on document_images (repo_id, commit_sha, image_path);
