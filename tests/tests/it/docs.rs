//! The project carries its own documents, and they stay true (issue 13, point 12; issue 32,
//! point 5): the ingest wire contract names every answer of the ingest function and shows its
//! hello-ack as served; the configuration page lists exactly the variables the code reads, with
//! the reference forms of every secret; the API document's endpoint table names every error code
//! of the HTTP functions; every relative link of the README and of `docs/` resolves inside the
//! repository, and the README links every document; the README is a map of at most 200 lines
//! whose commands exist; no document says a shipped feature is being built.
//!
//! These read files, the CLI's definitions and the library's own types; no database.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use shared::api::ApiError;
use shared::config::secrets::{PARAMETER_SUFFIX, SECRET_ARN_SUFFIX, SECRET_VARIABLES};
use shared::github::GithubError;
use shared::http::HttpError;
use shared::ingest::IngestError;
use shared::schema::SchemaBehind;
use shared::webhook::WebhookError;

use crate::deploy::repo_file;

const WIRE_CONTRACT: &str = "docs/ingest-wire-contract.md";
const CONFIGURATION: &str = "docs/configuration.md";
/// Where the endpoint table and the read API's codes are (the README's "Endpoints" section until
/// issue 32).
const API: &str = "docs/api.md";
/// Where configuration.md stops listing variables the code reads by name.
const NOT_READ_BY_NAME: &str = "## Read by libraries";

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The rows (cells trimmed) of the first markdown table after the line containing `marker`,
/// header and separator left out.
fn table_after(doc: &str, marker: &str) -> Vec<Vec<String>> {
    let start = doc
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the document"));
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(cells)
        .collect()
}

fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_owned()).collect()
}

/// An error's code as the wire contract's table writes it.
fn code_cell(code: Option<&str>) -> String {
    code.map_or_else(|| "(none)".to_owned(), |c| format!("`{c}`"))
}

/// Every ingest error once. The match has no wildcard: a new variant does not compile until it
/// is listed here, and then the wire contract must give it a row.
fn ingest_errors() -> Vec<IngestError> {
    use IngestError as E;
    let all = vec![
        E::NotFound,
        E::MethodNotAllowed { allow: "GET" },
        E::Unauthenticated,
        E::ReadUnauthenticated,
        E::PayloadTooLarge,
        E::UnsupportedEncoding,
        E::bad_request("x"),
        E::TargetNotOwned,
        E::RateLimited {
            retry_after_secs: 1,
        },
        E::ServerBusy {
            retry_after_secs: 1,
        },
        E::FeatureDisabled,
        E::ChunkOutOfSequence,
        E::IngestionFailed,
        E::DatabaseUnreachable,
    ];
    for e in &all {
        match e {
            E::NotFound
            | E::MethodNotAllowed { .. }
            | E::Unauthenticated
            | E::ReadUnauthenticated
            | E::PayloadTooLarge
            | E::UnsupportedEncoding
            | E::BadRequest(_)
            | E::TargetNotOwned
            | E::RateLimited { .. }
            | E::ServerBusy { .. }
            | E::FeatureDisabled
            | E::ChunkOutOfSequence
            | E::IngestionFailed
            | E::DatabaseUnreachable => {}
            // The transcript lane's own answers: its wire contract's ([`transcript_errors`]).
            E::TranscriptsDisabled
            | E::OffsetMismatch { .. }
            | E::UploadMissing
            | E::UploadExpired
            | E::StoreUnavailable
            | E::Refused { .. } => {}
        }
    }
    all
}

/// The transcript lane's own refusals (docs/transcript-wire-contract.md), beside the metadata
/// lane's codes it shares.
fn transcript_errors() -> Vec<IngestError> {
    use IngestError as E;
    vec![
        E::TranscriptsDisabled,
        E::OffsetMismatch {
            generation: 1,
            acked_offset: 0,
        },
        E::UploadMissing,
        E::UploadExpired,
        E::StoreUnavailable,
    ]
    .into_iter()
    .chain(
        syncplane_contract::transcripts::Refusal::ALL
            .into_iter()
            .map(|r| E::refused(r, "x")),
    )
    .collect()
}

#[test]
fn the_transcript_wire_contract_names_each_refusal_of_the_lane() {
    let doc = read("docs/transcript-wire-contract.md");
    for e in transcript_errors() {
        let code = e.code().expect("each of the lane's refusals has a code");
        let spelled = format!("`{} {code}`", e.status().as_u16());
        assert!(
            doc.contains(&spelled),
            "{spelled} not in the transcript wire contract"
        );
    }
}

/// Every GitHub client error once (exhaustive, as above): the sync API answers them as they are.
fn github_errors() -> Vec<GithubError> {
    use GithubError as E;
    let all = vec![
        E::RateLimited {
            retry_at: chrono::Utc::now(),
            secondary: false,
        },
        E::Unauthorized,
        E::BadCredentials,
        E::InvalidPrivateKey,
        E::InstallationUnavailable { suspended: true },
        E::Aborted,
        E::NotFound,
        E::Server { status: 502 },
        E::Timeout,
        E::Transport,
        E::Unexpected { status: 418 },
        E::Decode,
    ];
    for e in &all {
        match e {
            E::RateLimited { .. }
            | E::Unauthorized
            | E::BadCredentials
            | E::InvalidPrivateKey
            | E::InstallationUnavailable { .. }
            | E::Aborted
            | E::NotFound
            | E::Server { .. }
            | E::Timeout
            | E::Transport
            | E::Unexpected { .. }
            | E::Decode => {}
        }
    }
    all
}

/// Every sync API error once (exhaustive, as above), a GitHub failure for each GitHub error.
fn api_errors() -> Vec<ApiError> {
    use ApiError as E;
    let mut all = vec![
        E::NotFound,
        E::MethodNotAllowed { allow: "GET" },
        E::UnknownTenant,
        E::Unauthenticated,
        E::InvalidJson,
        E::BadRequest("x"),
        E::RepositoryNotSelected,
        E::RepositoryNotFound,
        E::RepositoryBusy,
        E::RunNotFound,
        E::GithubNotConfigured,
        E::QueueUnavailable,
        E::Internal,
        E::DatabaseUnreachable,
        E::ReadOnlyToken,
        E::UnknownParameter(shared::params::ParamError::Repeated("x".into())),
        E::InvalidLimit { max: 1 },
        E::MissingParameter("x"),
        E::InvalidCursor,
        E::InvalidPath,
        E::InvalidQuery,
        E::EmptyQuery,
        E::InvalidRepository,
        E::UnknownRepository,
        E::DocumentNotFound,
        E::PathIsFolder,
        E::ReadmeNotFound,
        E::InvalidFormat,
        E::ImageNotFound,
        E::ImageTooLarge,
        E::ImageTypeUnsupported,
    ];
    all.extend(github_errors().into_iter().map(E::Github));
    for e in &all {
        match e {
            E::NotFound
            | E::MethodNotAllowed { .. }
            | E::UnknownTenant
            | E::Unauthenticated
            | E::InvalidJson
            | E::BadRequest(_)
            | E::RepositoryNotSelected
            | E::RepositoryNotFound
            | E::RepositoryBusy
            | E::RunNotFound
            | E::GithubNotConfigured
            | E::Github(_)
            | E::QueueUnavailable
            | E::Internal
            | E::DatabaseUnreachable
            | E::ReadOnlyToken
            | E::UnknownParameter(_)
            | E::InvalidLimit { .. }
            | E::MissingParameter(_)
            | E::InvalidCursor
            | E::InvalidPath
            | E::InvalidQuery
            | E::EmptyQuery
            | E::InvalidRepository
            | E::UnknownRepository
            | E::DocumentNotFound
            | E::PathIsFolder
            | E::ReadmeNotFound
            | E::InvalidFormat
            | E::ImageNotFound
            | E::ImageTooLarge
            | E::ImageTypeUnsupported => {}
        }
    }
    all
}

/// Every webhook error once (exhaustive, as above).
fn webhook_errors() -> Vec<WebhookError> {
    use WebhookError as E;
    let all = vec![
        E::NotFound,
        E::MethodNotAllowed,
        E::UnknownTenant,
        E::MissingSignature,
        E::InvalidSignature,
        E::MissingEvent,
        E::InvalidJson,
        E::InstallationMismatch,
        E::QueueUnavailable,
        E::DispatchFailed,
    ];
    for e in &all {
        match e {
            E::NotFound
            | E::MethodNotAllowed
            | E::UnknownTenant
            | E::MissingSignature
            | E::InvalidSignature
            | E::MissingEvent
            | E::InvalidJson
            | E::InstallationMismatch
            | E::QueueUnavailable
            | E::DispatchFailed => {}
        }
    }
    all
}

fn schema_behind() -> SchemaBehind {
    SchemaBehind {
        database: 0,
        build: 1,
    }
}

#[test]
fn every_ingest_error_is_in_the_wire_contract() {
    let doc = read(WIRE_CONTRACT);
    let documented: BTreeSet<(u16, String)> = table_after(&doc, "<!-- errors:")
        .into_iter()
        .map(|row| {
            let status = row[0]
                .parse()
                .unwrap_or_else(|_| panic!("not a status: {row:?}"));
            (status, row[1].clone())
        })
        .collect();
    let mut answered: BTreeSet<(u16, String)> = ingest_errors()
        .iter()
        .map(|e| (e.status().as_u16(), code_cell(e.code())))
        .collect();
    let behind = schema_behind();
    answered.insert((behind.status().as_u16(), code_cell(behind.code())));
    assert_eq!(
        documented, answered,
        "the wire contract's table of answers (status, code) must be exactly what the ingest function answers"
    );
}

/// `262144` as `262,144`, as the documents write numbers.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn the_hello_ack_in_the_wire_contract_is_the_servers() {
    let doc = read(WIRE_CONTRACT);
    let after = &doc[doc.find("<!-- hello-ack:").expect("hello-ack marker")..];
    let block = after
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a json block after the hello-ack marker");
    let shown: Value = serde_json::from_str(block).expect("the hello-ack block is JSON");
    assert_eq!(
        shown,
        shared::http::envelope::success(shared::ingest::handler::hello_ack("direct"))
    );
    // The limits the prose quotes are the served ones.
    for limit in [
        shared::ingest::MAX_WIRE_BYTES,
        shared::ingest::MAX_DECODED_BYTES,
    ] {
        assert!(
            doc.contains(&thousands(limit)),
            "{} not in the text",
            thousands(limit)
        );
    }
    assert!(doc.contains(&format!(
        "1 to {} sessions",
        shared::ingest::MAX_SESSIONS_PER_BATCH
    )));
}

#[test]
fn every_error_code_of_the_http_functions_is_in_the_api_document() {
    let doc = read(API);
    let start = doc.find("\n## Endpoints").expect("an Endpoints section");
    let section = &doc[start + 1..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let codes: BTreeSet<&str> = api_errors()
        .iter()
        .map(ApiError::code)
        .chain(webhook_errors().iter().map(WebhookError::code))
        .chain(ingest_errors().iter().filter_map(IngestError::code))
        .chain(schema_behind().code())
        .collect();
    let missing: Vec<&str> = codes
        .into_iter()
        .filter(|c| !section.contains(&format!("`{c}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "{API}'s Endpoints section does not name {missing:?}"
    );
}

/// `.rs` files below `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn is_variable_name(s: &str) -> bool {
    s.len() >= 2
        && s.starts_with(|c: char| c.is_ascii_uppercase())
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// The environment variables the code of the functions, the CLI and the shared crate reads by
/// name: the name as a literal right after one of the ways the code reads a variable.
fn variables_read_by_code() -> BTreeSet<String> {
    const READS: [&str; 5] = [
        "get(\"",
        "var(\"",
        "var_os(\"",
        "lookup(\"",
        "VAR: &str = \"",
    ];
    let mut files = Vec::new();
    rust_files(&repo_file("shared"), &mut files);
    rust_files(&repo_file("cli/src"), &mut files);
    for entry in std::fs::read_dir(repo_file("functions")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    let mut names = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for how in READS {
            for (at, _) in text.match_indices(how) {
                let rest = &text[at + how.len()..];
                let name = &rest[..rest.find('"').unwrap_or(0)];
                if is_variable_name(name) {
                    names.insert(name.to_owned());
                }
            }
        }
    }
    names
}

/// The names in the first cell of configuration.md's tables, above the section of variables the
/// code does not read by name.
fn variables_documented() -> BTreeSet<String> {
    let doc = read(CONFIGURATION);
    let listed = &doc[..doc.find(NOT_READ_BY_NAME).expect("the libraries section")];
    listed
        .lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| cells(l).into_iter().next())
        .map(|c| c.trim_matches('`').to_owned())
        .filter(|c| is_variable_name(c))
        .collect()
}

#[test]
fn every_variable_the_code_reads_is_in_configuration_md() {
    let in_code = variables_read_by_code();
    assert!(
        in_code.contains("DATABASE_URL") && in_code.contains("SYNC_SEARCH_CONFIG"),
        "the scan finds the variables config.rs reads: {in_code:?}"
    );
    let documented = variables_documented();
    let undocumented: Vec<_> = in_code.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "read by the code, not in {CONFIGURATION}: {undocumented:?}"
    );
}

/// Variables configuration.md lists above its "Read by libraries" section that the scan of
/// [`variables_read_by_code`] does not find in the Rust code, each with the reason it is listed
/// there all the same. Empty: every name in those tables is read by name by the functions, the
/// CLI or the shared crate (the scripts' own variables and those only libraries read are listed
/// below that section, where this test does not look).
const DOCUMENTED_BUT_NOT_READ_BY_NAME: [(&str, &str); 0] = [];

#[test]
fn every_variable_named_in_configuration_md_is_read_by_the_code() {
    let in_code = variables_read_by_code();
    let documented = variables_documented();
    assert!(
        documented.contains("DATABASE_URL") && documented.len() >= 20,
        "the scan finds configuration.md's tables: {documented:?}"
    );
    for (name, why) in DOCUMENTED_BUT_NOT_READ_BY_NAME {
        assert!(
            documented.contains(name) && !in_code.contains(name),
            "{name} ({why}) is no longer an exception: drop it from the list"
        );
    }
    let unread: Vec<_> = documented
        .difference(&in_code)
        .filter(|name| {
            !DOCUMENTED_BUT_NOT_READ_BY_NAME
                .iter()
                .any(|(allowed, _)| *allowed == name.as_str())
        })
        .collect();
    assert!(
        unread.is_empty(),
        "listed in {CONFIGURATION} as read by the code, but the code never reads: {unread:?}"
    );
}

#[test]
fn every_secret_variable_has_its_references_in_configuration_md() {
    let doc = read(CONFIGURATION);
    let documented: BTreeSet<Vec<String>> = table_after(&doc, "<!-- secret references:")
        .into_iter()
        .collect();
    let expected: BTreeSet<Vec<String>> = SECRET_VARIABLES
        .iter()
        .map(|v| {
            vec![
                format!("`{v}`"),
                format!("`{v}{SECRET_ARN_SUFFIX}`"),
                format!("`{v}{PARAMETER_SUFFIX}`"),
            ]
        })
        .collect();
    assert_eq!(documented, expected);
}

/// Keys of every `Environment.Variables` mapping of template.yaml (Globals and functions).
fn template_variables(v: &serde_yaml_ng::Value, out: &mut BTreeSet<String>) {
    match v {
        serde_yaml_ng::Value::Mapping(m) => {
            if let Some(vars) = m
                .get("Environment")
                .and_then(|e| e.get("Variables"))
                .and_then(|v| v.as_mapping())
            {
                out.extend(vars.keys().filter_map(|k| k.as_str()).map(str::to_owned));
            }
            for value in m.values() {
                template_variables(value, out);
            }
        }
        serde_yaml_ng::Value::Sequence(s) => s.iter().for_each(|v| template_variables(v, out)),
        serde_yaml_ng::Value::Tagged(t) => template_variables(&t.value, out),
        _ => {}
    }
}

#[test]
fn every_variable_a_deployment_sets_is_in_configuration_md() {
    let mut set = BTreeSet::new();
    let template: serde_yaml_ng::Value = serde_yaml_ng::from_str(&read("template.yaml")).unwrap();
    template_variables(&template, &mut set);
    assert!(
        set.contains("DATABASE_URL"),
        "the template's variables: {set:?}"
    );
    for line in read(".env.deploy.example").lines() {
        if let Some((name, _)) = line.split_once('=')
            && is_variable_name(name)
        {
            set.insert(name.to_owned());
        }
    }
    for entry in std::fs::read_dir(repo_file("functions")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let toml: toml::Value = toml::from_str(&std::fs::read_to_string(&manifest).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let env = toml
            .get("package")
            .and_then(|p| p.get("metadata"))
            .and_then(|m| m.get("syncplane"))
            .and_then(|s| s.get("env"));
        set.extend(
            env.and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str())
                .map(str::to_owned),
        );
    }
    let doc = read(CONFIGURATION);
    let missing: Vec<_> = set
        .iter()
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "set by template.yaml, .env.deploy.example or a function's metadata, not in {CONFIGURATION}: {missing:?}"
    );
}

/// The relative link targets of a markdown text: `](target)`, without an `#anchor`.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let target = target.split('#').next().unwrap_or("");
            let external = target.contains("://") || target.starts_with("mailto:");
            (!external && !target.is_empty()).then(|| target.to_owned())
        })
        .collect()
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves_inside_the_repository() {
    let root = repo_file("").canonicalize().unwrap();
    let mut pages = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(repo_file("docs"))
        .unwrap()
        .map(|e| format!("docs/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md"))
        .collect();
    docs.sort();
    pages.extend(docs.iter().cloned());
    for page in &pages {
        let text = read(page);
        for forbidden in ["../shared", "/work/shared"] {
            assert!(
                !text.contains(forbidden),
                "{page} points outside the repository ({forbidden})"
            );
        }
        let dir = repo_file(page).parent().unwrap().to_path_buf();
        for link in relative_links(&text) {
            let target = dir.join(&link).canonicalize().unwrap_or_else(|e| {
                panic!("{page}: the link {link} does not resolve: {e}");
            });
            assert!(
                target.starts_with(&root),
                "{page}: the link {link} leaves the repository"
            );
        }
    }
    let readme = read("README.md");
    for doc in &docs {
        assert!(
            readme.contains(&format!("]({doc})")),
            "README.md does not link to {doc}"
        );
    }
}

/// Event names the webhook's routing matches on (`("push", _) => ...` arms of its `match`).
fn routed_events() -> BTreeSet<String> {
    let source = read("shared/worker/src/routing.rs");
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("(\""))
        .filter_map(|rest| rest.split_once('"').map(|(event, _)| event.to_owned()))
        .collect()
}

#[test]
fn the_github_app_guide_names_every_event_the_webhook_routes_and_read_only_permissions() {
    let guide = read("docs/github-app.md");
    let events = routed_events();
    for expected in [
        "push",
        "repository",
        "installation",
        "installation_repositories",
    ] {
        assert!(
            events.contains(expected),
            "routing handles {expected}: {events:?}"
        );
    }
    for event in &events {
        // The subscribed ones by their checkbox name (**Push**), the others by their name or by
        // the answer the guide shows for them (`ping`).
        let checkbox = format!("**{}{}**", event[..1].to_uppercase(), &event[1..]);
        let named = format!("`{event}`");
        let answered = format!("\"event\": \"{event}\"");
        assert!(
            guide.contains(&checkbox) || guide.contains(&named) || guide.contains(&answered),
            "docs/github-app.md names the {event} event"
        );
    }
    let permissions = table_after(&guide, "**Repository permissions:**");
    let granted: Vec<(String, String)> = permissions
        .iter()
        .map(|row| (row[0].clone(), row[1].clone()))
        .collect();
    assert_eq!(
        granted,
        [
            ("Contents".to_owned(), "Read-only".to_owned()),
            ("Metadata".to_owned(), "Read-only".to_owned())
        ],
        "the App asks for Contents and Metadata, read-only, and nothing else"
    );
    // The guide's opening, before its steps, says the same in short (what the README's section
    // on the App said until issue 32).
    let opening = guide
        .split("\n## 1. ")
        .next()
        .expect("the guide's opening")
        .to_lowercase();
    for word in [
        "contents",
        "metadata",
        "push",
        "repository",
        "installation",
        "webhookurl",
    ] {
        assert!(
            opening.contains(word),
            "docs/github-app.md's opening names {word}"
        );
    }
}

/// Files under `dir` (recursively) whose name ends with one of `exts`, build output left out.
fn files_with(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", ".git", "vendor", "node_modules"].contains(&name.as_str())
                && !name.starts_with('.')
            {
                files_with(&path, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

#[test]
fn code_comments_point_at_documents_the_repository_has() {
    // The design notes the project carries are docs/design.md; a comment citing a document the
    // repository does not have sends its reader nowhere.
    let mut files = Vec::new();
    files_with(
        &repo_file(""),
        &[".rs", ".yaml", ".sh", ".toml", ".py"],
        &mut files,
    );
    assert!(
        files.len() > 50,
        "the walk found the sources: {}",
        files.len()
    );
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for forbidden in ["DESIGN.md", "../shared/", "/work/shared"] {
            // This test's own list is the one place the names may appear.
            if text.contains(forbidden) && !file.ends_with("tests/tests/it/docs.rs") {
                found.push(format!("{}: {forbidden}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "references outside the repository: {found:#?}"
    );
}

/// Lowercase, backticks and section numbers ("3. ") gone, runs of white space one space: how a
/// comment's quoted section name is compared with a heading.
fn normalized(text: &str) -> String {
    let text = text.replace('`', "").to_lowercase();
    let words: Vec<&str> = text.split_whitespace().collect();
    let words = match words.first() {
        Some(w) if w.trim_end_matches('.').parse::<u32>().is_ok() && w.ends_with('.') => {
            &words[1..]
        }
        _ => &words[..],
    };
    words.join(" ")
}

/// Whether a heading is the one a citation names: the name's pieces around each `...` (a route
/// cited as `POST .../intent`) appear in the heading in order.
fn cites(heading: &str, name: &str) -> bool {
    let mut rest = heading;
    for piece in name.split("...") {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

#[test]
fn every_section_a_comment_cites_is_a_heading_of_that_document() {
    // Issue 32: the README became a map and its sections moved into docs/; a comment that says
    // `README "Limits"` or `docs/deploy.md "Secrets"` must name a heading the document has.
    let citation = regex_lite::Regex::new(r#"(README|docs/[a-z0-9-]+\.md),? "([^"]+)""#).unwrap();
    // A comment's continuation lines joined, so a name wrapped over two lines is read whole.
    let continuation = regex_lite::Regex::new(r"\n[ \t]*(//[!/]?|#)[ \t]*").unwrap();
    let mut files = Vec::new();
    files_with(
        &repo_file(""),
        &[".rs", ".yaml", ".sh", ".toml", ".py"],
        &mut files,
    );
    let mut cited = 0;
    let mut dangling = Vec::new();
    for file in files {
        if file.ends_with("tests/tests/it/docs.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let joined = continuation.replace_all(&text, " ");
        for found in citation.captures_iter(&joined) {
            let document = if &found[1] == "README" {
                "README.md"
            } else {
                &found[1]
            };
            let name = normalized(&found[2]);
            let headings: Vec<String> = read(document)
                .lines()
                .filter(|l| l.starts_with('#'))
                .map(|l| normalized(l.trim_start_matches('#')))
                .collect();
            cited += 1;
            if !headings.iter().any(|h| cites(h, &name)) {
                dangling.push(format!("{}: {document} \"{}\"", file.display(), &found[2]));
            }
        }
    }
    assert!(cited > 20, "the walk found the citations: {cited}");
    assert!(
        dangling.is_empty(),
        "sections cited that their document does not have: {dangling:#?}"
    );
}

#[test]
fn the_readme_is_a_map_of_at_most_200_lines() {
    // Issue 32, point 4: the README says what syncplane is, how to set it up, what it looks like
    // and where everything else is; the rest lives in docs/.
    let lines = read("README.md").lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move the detail into docs/ and link it"
    );
}

/// The code of a markdown text: each fenced block's body and each inline code span.
fn code_of(text: &str) -> Vec<&str> {
    let mut code = Vec::new();
    for (i, part) in text.split("```").enumerate() {
        if i % 2 == 1 {
            // The fence's first line is its info string (`sh`).
            code.push(part.split_once('\n').map_or("", |(_, body)| body));
        } else {
            code.extend(part.split('`').skip(1).step_by(2));
        }
    }
    code
}

/// What follows `program` in `code`, one list of words per time the program is named: `cargo
/// run --bin syncplane -- demo remove` gives `["--", "demo", "remove"]`.
fn invocations<'a>(code: &'a str, program: &str) -> Vec<Vec<&'a str>> {
    let words: Vec<&str> = code.split_whitespace().collect();
    words
        .iter()
        .enumerate()
        .filter(|(_, w)| **w == program)
        .map(|(at, _)| words[at + 1..].to_vec())
        .collect()
}

/// A word that can only be a subcommand's name (not an option, a value or shell).
fn is_command_word(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_lowercase())
        && word
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The subcommands `words` name, walked down clap's definition of `syncplane`; an error names a
/// word that is no subcommand where one is expected.
fn syncplane_subcommands(root: &clap::Command, words: &[&str]) -> Result<Vec<String>, String> {
    let mut command = root;
    let mut path = Vec::new();
    for word in words.iter().filter(|w| **w != "--") {
        if !command.has_subcommands() || !is_command_word(word) {
            break;
        }
        path.push((*word).to_owned());
        command = command
            .find_subcommand(word)
            .ok_or_else(|| format!("`syncplane {}`", path.join(" ")))?;
    }
    Ok(path)
}

/// The names clap gives the variants of `enum {name}` in a Rust source (kebab-case).
fn clap_variants(source: &str, name: &str) -> BTreeSet<String> {
    let start = source
        .find(&format!("enum {name} {{"))
        .unwrap_or_else(|| panic!("no enum {name}"));
    let body = &source[start..];
    let body = &body[..body.find("\n}").expect("the enum's end")];
    body.lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter_map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()).next())
        .map(|variant| {
            let mut kebab = String::new();
            for (i, c) in variant.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    kebab.push('-');
                }
                kebab.push(c.to_ascii_lowercase());
            }
            kebab
        })
        .collect()
}

/// `syncplane-agent`'s command is a binary, not a library (clients/agent-sync/src/main.rs), so
/// its clap definition cannot be asked: its subcommands are read from the enums clap derives
/// them from, one per level that has subcommands.
const AGENT_COMMANDS: [(&[&str], &str, &str); 2] = [
    (&[], "clients/agent-sync/src/main.rs", "Command"),
    (
        &["transcripts"],
        "clients/agent-sync/src/transcripts_cli.rs",
        "TranscriptsCommand",
    ),
];

fn agent_subcommands(words: &[&str]) -> Result<Vec<String>, String> {
    let mut path: Vec<String> = Vec::new();
    for word in words.iter().filter(|w| **w != "--") {
        let Some((_, file, name)) = AGENT_COMMANDS.iter().find(|(at, _, _)| *at == path) else {
            break;
        };
        if !is_command_word(word) {
            break;
        }
        let known = clap_variants(&read(file), name).contains(*word);
        path.push((*word).to_owned());
        if !known {
            return Err(format!("`syncplane-agent {}`", path.join(" ")));
        }
    }
    Ok(path)
}

#[test]
fn every_command_of_the_readmes_set_up_exists() {
    let readme = read("README.md");
    let setup = readme
        .split("\n## Set-up\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Set-up section");
    let block = code_of(setup)
        .into_iter()
        .next()
        .expect("the set-up commands");
    let commands: Vec<&str> = block
        .lines()
        .filter_map(|l| l.split('#').next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        ["bash scripts/local.sh", "bash scripts/test.sh"],
        "the two set-up commands"
    );
    // Every script (and the folder) the README's code names exists.
    let code = code_of(&readme);
    for snippet in &code {
        for word in snippet.split_whitespace() {
            if let Some(at) = word.find("scripts/") {
                let path = word[at..].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
                assert!(
                    repo_file(path).exists(),
                    "README.md names {path}, which does not exist"
                );
            }
        }
    }
    // Every `syncplane` and `syncplane-agent` subcommand the README's code names is one.
    let syncplane = <syncplane_cli::Cli as clap::CommandFactory>::command();
    let mut named = BTreeSet::new();
    let mut unknown = Vec::new();
    for snippet in &code {
        for words in invocations(snippet, "syncplane") {
            match syncplane_subcommands(&syncplane, &words) {
                Ok(path) if !path.is_empty() => {
                    named.insert(format!("syncplane {}", path.join(" ")));
                }
                Ok(_) => {}
                Err(e) => unknown.push(e),
            }
        }
        for words in invocations(snippet, "syncplane-agent") {
            match agent_subcommands(&words) {
                Ok(path) if !path.is_empty() => {
                    named.insert(format!("syncplane-agent {}", path.join(" ")));
                }
                Ok(_) => {}
                Err(e) => unknown.push(e),
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "README.md names commands that do not exist: {unknown:?} (checked: {named:?})"
    );
    for expected in ["syncplane demo remove", "syncplane-agent push"] {
        assert!(
            named.contains(expected),
            "the scan finds the README's commands: {named:?}"
        );
    }
}

#[test]
fn no_document_says_a_shipped_feature_is_being_built() {
    // A feature the repository ships is described as it is; a document that says it is "being
    // built" (the transcript lane was, long after it shipped) sends readers to look elsewhere.
    let mut pages = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(repo_file("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    assert!(pages.len() > 10, "the documents: {pages:?}");
    let found: Vec<String> = pages
        .iter()
        .flat_map(|page| {
            read(page)
                .lines()
                .enumerate()
                .filter(|(_, l)| l.to_lowercase().contains("being built"))
                .map(|(n, l)| format!("{page}:{}: {l}", n + 1))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(found.is_empty(), "{found:#?}");
}
