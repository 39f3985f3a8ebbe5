//! The analyser on small in-memory crates.

use std::collections::BTreeMap;

use super::{Analysis, Edge};

fn crate_of(files: &[(&str, &str)]) -> Analysis {
    let sources: BTreeMap<String, String> = files
        .iter()
        .map(|(p, s)| ((*p).to_owned(), (*s).to_owned()))
        .collect();
    Analysis::of_sources("src", &sources)
}

/// The edges as `from -> to @line`, without the `src/` label.
fn edges(a: &Analysis) -> Vec<String> {
    a.edges
        .iter()
        .map(|e: &Edge| {
            format!(
                "{} -> {} @{}",
                e.from.trim_start_matches("src/"),
                e.to.trim_start_matches("src/"),
                e.line
            )
        })
        .collect()
}

const LIB: &str = "pub mod a;\npub mod b;\npub mod c;\n";

#[test]
fn module_paths_follow_the_file_layout() {
    assert_eq!(super::module_of("lib.rs"), Some(vec![]));
    assert_eq!(super::module_of("main.rs"), Some(vec![]));
    assert_eq!(super::module_of("jobs/mod.rs"), Some(vec!["jobs".into()]));
    assert_eq!(super::module_of("jobs.rs"), Some(vec!["jobs".into()]));
    assert_eq!(
        super::module_of("api/read/cursor.rs"),
        Some(vec!["api".into(), "read".into(), "cursor".into()])
    );
    assert_eq!(super::module_of("README.md"), None);
}

#[test]
fn nested_braces_self_globs_and_renames_over_lines() {
    let a = crate_of(&[
        ("lib.rs", LIB),
        (
            "a.rs",
            "use crate::{\n    b::{self, X as Y},\n    c::*,\n};\nfn f() {}\n",
        ),
        ("b.rs", "pub struct X;\n"),
        ("c.rs", "pub struct Z;\n"),
    ]);
    assert_eq!(edges(&a), ["a.rs -> b.rs @2", "a.rs -> c.rs @3"]);
}

#[test]
fn a_path_resolves_to_the_deepest_existing_file() {
    let a = crate_of(&[
        ("lib.rs", "pub mod jobs;\npub mod app;\n"),
        ("jobs/mod.rs", "pub mod sqs;\npub struct Job;\n"),
        ("jobs/sqs.rs", "pub struct SqsAdapter;\n"),
        (
            "app.rs",
            "use crate::jobs::sqs::SqsAdapter;\nuse crate::jobs::Job;\n",
        ),
    ]);
    assert_eq!(
        edges(&a),
        ["app.rs -> jobs/sqs.rs @1", "app.rs -> jobs/mod.rs @2"]
    );
}

#[test]
fn inline_crate_paths_and_imported_module_names_count() {
    let a = crate_of(&[
        ("lib.rs", LIB),
        (
            "a.rs",
            "use crate::c;\nfn f() {\n    let x = crate::b::make(1);\n    c::go::<u8>();\n}\n",
        ),
        ("b.rs", "pub fn make(_: u8) {}\n"),
        ("c.rs", "pub fn go<T>() {}\n"),
    ]);
    assert_eq!(edges(&a), ["a.rs -> c.rs @1", "a.rs -> b.rs @3"]);
}

#[test]
fn super_paths_reach_parents_and_siblings() {
    let a = crate_of(&[
        ("lib.rs", "pub mod api;\n"),
        (
            "api/mod.rs",
            "pub mod error;\npub mod read;\npub struct Thing;\n",
        ),
        ("api/error.rs", "pub struct ApiError;\n"),
        ("api/read.rs", "mod cursor;\nuse super::Thing;\n"),
        (
            "api/read/cursor.rs",
            "use super::super::error::ApiError;\nfn f() -> super::super::Thing { todo!() }\n",
        ),
    ]);
    assert_eq!(
        edges(&a),
        [
            "api/read.rs -> api/mod.rs @2",
            "api/read/cursor.rs -> api/error.rs @1",
            "api/read/cursor.rs -> api/mod.rs @2",
        ]
    );
}

#[test]
fn a_mod_declaration_is_no_import_and_a_file_naming_itself_is_no_edge() {
    let a = crate_of(&[
        ("lib.rs", "pub mod jobs;\n"),
        (
            "jobs/mod.rs",
            "pub mod sqs;\nmod inner { pub fn f() {} }\nfn g() { self::inner::f(); crate::jobs::inner::f(); }\n",
        ),
        ("jobs/sqs.rs", "pub fn h() { self::h(); }\n"),
    ]);
    assert!(edges(&a).is_empty(), "{:?}", edges(&a));
}

#[test]
fn comments_doc_comments_and_strings_do_not_count() {
    let a = crate_of(&[
        ("lib.rs", LIB),
        (
            "a.rs",
            concat!(
                "//! Uses [`crate::b::X`].\n",
                "// use crate::b::X;\n",
                "/* crate::b::X /* nested */ crate::c::Z */\n",
                "/// see crate::c::Z\n",
                "fn f() -> &'static str { let _c = 'x'; let _q = '\\''; \"crate::b::X\" }\n",
                "fn g() -> &'static str { r#\"use crate::c::Z;\"# }\n",
            ),
        ),
        ("b.rs", "pub struct X;\n"),
        ("c.rs", "pub struct Z;\n"),
    ]);
    assert!(edges(&a).is_empty(), "{:?}", edges(&a));
}

#[test]
fn cfg_test_modules_and_test_only_files_do_not_count() {
    let a = crate_of(&[
        (
            "lib.rs",
            "pub mod a;\npub mod b;\n#[cfg(test)]\nmod testing;\n",
        ),
        (
            "a.rs",
            "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::b::X;\n    #[test]\n    fn t() { crate::b::make(); }\n}\n",
        ),
        ("b.rs", "pub struct X;\npub fn make() {}\n"),
        ("testing.rs", "use crate::a::f;\n"),
    ]);
    assert!(edges(&a).is_empty(), "{:?}", edges(&a));
    assert!(a.files.iter().all(|f| !f.path.ends_with("testing.rs")));
}

#[test]
fn a_two_file_cycle_is_found_with_its_lines() {
    let a = crate_of(&[
        ("lib.rs", LIB),
        ("a.rs", "use crate::b::X;\npub struct Y;\n"),
        ("b.rs", "pub struct X;\n\nfn f(_: crate::a::Y) {}\n"),
        ("c.rs", "use crate::a::Y;\n"),
    ]);
    let cycles = a.file_cycles();
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].members, ["src/a.rs", "src/b.rs"]);
    let text = cycles[0].to_string();
    assert!(
        text.contains("src/a.rs:1: imports crate::b::X -> src/b.rs"),
        "{text}"
    );
    assert!(
        text.contains("src/b.rs:3: imports crate::a::Y -> src/a.rs"),
        "{text}"
    );
}

#[test]
fn module_groups_that_import_each_other_are_found() {
    let a = crate_of(&[
        ("lib.rs", "pub mod jobs;\npub mod webhook;\npub mod sync;\n"),
        ("jobs/mod.rs", "pub mod run;\n"),
        ("jobs/run.rs", "use crate::webhook::route;\n"),
        ("webhook/mod.rs", "pub fn route() {}\npub mod queue;\n"),
        ("webhook/queue.rs", "use crate::jobs::Job;\n"),
        ("sync.rs", "use crate::jobs::Job;\n"),
    ]);
    assert!(a.file_cycles().is_empty());
    let groups = a.group_cycles();
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].members, ["jobs", "webhook"]);
}

#[test]
fn an_upward_import_is_reported_with_its_line() {
    let a = crate_of(&[
        ("lib.rs", "pub mod config;\npub mod jobs;\npub mod app;\n"),
        ("config.rs", "pub struct Config;\n"),
        (
            "jobs.rs",
            "use crate::config::Config;\n\nfn f() { crate::app::run(); }\n",
        ),
        ("app.rs", "use crate::jobs;\npub fn run() {}\n"),
    ]);
    let layers: &[&[&str]] = &[&["config"], &["jobs"], &["app"]];
    let upward: Vec<String> = a
        .upward_imports(layers)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        upward,
        ["src/jobs.rs:3: imports crate::app::run (layer 2 jobs -> layer 3 app)"]
    );
    assert!(a.unlayered(layers).is_empty());
    assert_eq!(a.unlayered(&[&["config"]]), ["app", "jobs"]);
}

#[test]
fn a_parent_naming_its_child_is_no_edge_but_a_child_naming_its_parent_is() {
    let a = crate_of(&[
        ("lib.rs", "pub mod jobs;\npub use jobs::Job;\n"),
        (
            "jobs/mod.rs",
            "mod sqs;\npub use sqs::SqsAdapter;\npub struct Job;\n",
        ),
        (
            "jobs/sqs.rs",
            "use super::{self, Job};\npub struct SqsAdapter;\n",
        ),
    ]);
    assert_eq!(edges(&a), ["jobs/sqs.rs -> jobs/mod.rs @1"]);
    assert!(a.file_cycles().is_empty());
    assert_eq!(a.edges[0].path, "super");
}

#[test]
fn pub_use_renames_and_macro_crate_paths_resolve() {
    let a = crate_of(&[
        ("lib.rs", "pub mod jobs;\npub mod app;\npub mod c;\n"),
        ("jobs/mod.rs", "pub mod sqs;\n"),
        ("jobs/sqs.rs", "pub struct SqsAdapter;\n"),
        ("c.rs", "pub fn f() {}\n"),
        (
            "app.rs",
            concat!(
                "pub(crate) use crate::jobs as queue;\n",
                "macro_rules! call { () => { $crate::c::f() }; }\n",
                "fn g() { let _ = queue::sqs::SqsAdapter; }\n",
            ),
        ),
    ]);
    assert_eq!(
        edges(&a),
        [
            "app.rs -> jobs/mod.rs @1",
            "app.rs -> c.rs @2",
            "app.rs -> jobs/sqs.rs @3",
        ]
    );
}

#[test]
fn unfinished_input_does_not_panic() {
    for src in [
        "'\\",
        "r#\"",
        "\"abc",
        "/* open",
        "use crate::{a",
        "'",
        "b",
        "r#",
    ] {
        let _ = crate_of(&[("lib.rs", src)]);
    }
}
