-- The read API (issue 11): search vectors weighted title > headings > body, one per search
-- language the API offers (SYNC_SEARCH_CONFIG picks which one queries use, so a query is always
-- parsed with the configuration its vector was built with), READMEs searchable like documents,
-- and the indexes keyset pagination walks.
--
-- 'english' stems and drops stop words ("configuring" finds "configure"); 'simple' keeps every
-- word as written (code identifiers, non-English docs). The headings are weighted on their own
-- (their text only, not the anchors).

alter table documents drop column search_vector;
alter table documents add column search_vector tsvector generated always as (
    setweight(to_tsvector('english', title), 'A')
    || setweight(to_tsvector('english', jsonb_path_query_array(headings, '$[*].text')), 'B')
    || setweight(to_tsvector('english', body), 'C')
) stored;
alter table documents add column search_vector_simple tsvector generated always as (
    setweight(to_tsvector('simple', title), 'A')
    || setweight(to_tsvector('simple', jsonb_path_query_array(headings, '$[*].text')), 'B')
    || setweight(to_tsvector('simple', body), 'C')
) stored;
create index documents_search_idx on documents using gin (search_vector);
create index documents_search_simple_idx on documents using gin (search_vector_simple);

alter table readmes drop column search_vector;
alter table readmes add column search_vector tsvector generated always as (
    setweight(to_tsvector('english', title), 'A')
    || setweight(to_tsvector('english', jsonb_path_query_array(headings, '$[*].text')), 'B')
    || setweight(to_tsvector('english', body), 'C')
) stored;
alter table readmes add column search_vector_simple tsvector generated always as (
    setweight(to_tsvector('simple', title), 'A')
    || setweight(to_tsvector('simple', jsonb_path_query_array(headings, '$[*].text')), 'B')
    || setweight(to_tsvector('simple', body), 'C')
) stored;
create index readmes_search_idx on readmes using gin (search_vector);
create index readmes_search_simple_idx on readmes using gin (search_vector_simple);

-- GET /api/repos pages in the listing order, (lower(owner), lower(name), github_id), from an index.
create index repos_listing_idx on repos (lower(owner), lower(name), github_id);
