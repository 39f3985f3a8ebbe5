-- One installation token per GitHub App installation, shared by every process of the tenant
-- (each CLI run, each Lambda execution environment). GitHub scopes ETags to the token that
-- received them, so processes that each minted their own token never got a 304 for an ETag
-- another process stored: an unchanged repository cost a rate-limited 200 and a rewrite.
--
-- The token is stored encrypted (AES-256-GCM, a random nonce per write). The key is derived with
-- HKDF-SHA256 from the App's private key, which never enters the database; the API URL and the
-- installation id are bound as associated data, so a row copied to another installation or host
-- does not decrypt. A row that does not decrypt (the App key changed) is replaced by a new mint.
create table github_installation_tokens (
    api_url          text not null check (api_url <> ''),
    installation_id  bigint not null check (installation_id > 0),
    nonce            bytea not null check (octet_length(nonce) = 12),
    -- Ciphertext followed by the 16-byte authentication tag.
    ciphertext       bytea not null check (octet_length(ciphertext) > 16),
    expires_at       timestamptz not null,
    updated_at       timestamptz not null default clock_timestamp(),
    primary key (api_url, installation_id)
);
