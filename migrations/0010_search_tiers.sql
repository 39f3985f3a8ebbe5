-- Search in two tiers (issue 11 "Search"; shared/src/api/read/search.rs): a document whose title
-- and headings alone satisfy the query ranks above one that matches only with its body, and each
-- tier ranks a bounded candidate set. Ranking reads every candidate's vector, and a word that most
-- documents contain would otherwise mean reading all of them (1 GB of vectors for 100,000
-- documents); the small title-and-headings vector lives in the row, not in TOAST.
alter table documents add column head_vector tsvector generated always as (
    setweight(to_tsvector('english', title), 'A')
    || setweight(to_tsvector('english', jsonb_path_query_array(headings, '$[*].text')), 'B')
) stored;
alter table documents add column head_vector_simple tsvector generated always as (
    setweight(to_tsvector('simple', title), 'A')
    || setweight(to_tsvector('simple', jsonb_path_query_array(headings, '$[*].text')), 'B')
) stored;
create index documents_head_idx on documents using gin (head_vector);
create index documents_head_simple_idx on documents using gin (head_vector_simple);

alter table readmes add column head_vector tsvector generated always as (
    setweight(to_tsvector('english', title), 'A')
    || setweight(to_tsvector('english', jsonb_path_query_array(headings, '$[*].text')), 'B')
) stored;
alter table readmes add column head_vector_simple tsvector generated always as (
    setweight(to_tsvector('simple', title), 'A')
    || setweight(to_tsvector('simple', jsonb_path_query_array(headings, '$[*].text')), 'B')
) stored;
create index readmes_head_idx on readmes using gin (head_vector);
create index readmes_head_simple_idx on readmes using gin (head_vector_simple);
