//! Issue 19's one-way layers, held by cargo since issue 33: every crate of the workspace depends
//! only on crates below it ([`CRATE_LAYERS`], docs/design.md "Crates"), and each Lambda function
//! only on its surface. Inside a crate, checked on the source: no file imports another that
//! imports it back, no module group imports another that imports it back, and no import in the
//! floor crate (`shared/core`) runs up its layers ([`CORE_LAYERS`]). Every failure names the file and the line of the import. The analysis
//! is `syncplane_tests::imports` (`cargo run -p syncplane-tests --features tools --bin imports` prints it all).

use std::collections::BTreeMap;
use std::path::PathBuf;

use syncplane_tests::crates::{
    CRATE_LAYERS, FUNCTION_SURFACES, INLINE_JOBS, layer_of, manifests, resolved_packages,
    resolved_packages_with, unlayered, upward_dependencies,
};
use syncplane_tests::imports::{Analysis, CORE_LAYERS, Cycle, read_sources, workspace_crates};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn analysis(src: &str) -> Analysis {
    Analysis::of_dir(&root(), src).unwrap_or_else(|e| panic!("reading {src}: {e}"))
}

fn listed(cycles: &[Cycle]) -> String {
    cycles
        .iter()
        .map(|c| format!("  {}", c.to_string().replace('\n', "\n  ")))
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_no_file_cycles(src: &str) {
    let cycles = analysis(src).file_cycles();
    assert!(
        cycles.is_empty(),
        "{} file cycle(s) in {src} (files that import each other):\n{}",
        cycles.len(),
        listed(&cycles)
    );
}

#[test]
fn the_floor_crate_has_no_import_cycles_between_files() {
    assert_no_file_cycles("shared/core/src");
}

#[test]
fn cli_has_no_import_cycles_between_files() {
    assert_no_file_cycles("cli/src");
}

#[test]
fn agent_client_has_no_import_cycles_between_files() {
    assert_no_file_cycles("clients/agent-sync/src");
}

/// The function binaries and any crate added later (a wire-contract crate, say).
#[test]
fn no_other_workspace_crate_has_import_cycles_between_files() {
    let named = ["shared/core/src", "cli/src", "clients/agent-sync/src"];
    let crates = workspace_crates(&root()).expect("workspace members");
    for src in named {
        assert!(
            crates.iter().any(|c| c == src),
            "{src} is no member: {crates:?}"
        );
    }
    for src in crates.iter().filter(|c| !named.contains(&c.as_str())) {
        assert_no_file_cycles(src);
    }
}

#[test]
fn no_module_group_imports_another_that_imports_it_back() {
    let mut found = Vec::new();
    for src in workspace_crates(&root()).expect("workspace members") {
        for cycle in analysis(&src).group_cycles() {
            found.push(format!("{src}: {cycle}"));
        }
    }
    assert!(
        found.is_empty(),
        "{} module group cycle(s) (first import each way):\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn no_import_of_the_floor_crate_runs_up_its_layers() {
    let upward = analysis("shared/core/src").upward_imports(CORE_LAYERS);
    assert!(
        upward.is_empty(),
        "{} import(s) in shared/core/src run up its layers (CORE_LAYERS, docs/design.md):\n{}",
        upward.len(),
        upward
            .iter()
            .map(|u| format!("  {u}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_module_of_the_floor_crate_has_a_layer() {
    let unlayered = analysis("shared/core/src").unlayered(CORE_LAYERS);
    assert!(
        unlayered.is_empty(),
        "modules of shared/core/src in no layer of CORE_LAYERS (place them, and in docs/design.md): {unlayered:?}"
    );
}

/// The checks can fail: an import planted from the lowest layer into the highest (and back) is
/// reported with its file and line, and the two files as a cycle.
#[test]
fn a_planted_upward_import_and_cycle_are_caught() {
    let sources = read_sources(&root().join("shared/core/src")).expect("shared/core/src");
    let today = Analysis::of_sources("shared/core/src", &sources);
    let in_layer = |layer: &[&str]| {
        today
            .files
            .iter()
            .find(|f| f.module.len() == 1 && f.group().is_some_and(|g| layer.contains(&g)))
            .expect("a module in the layer")
            .clone()
    };
    let (low, high) = (
        in_layer(CORE_LAYERS[0]),
        in_layer(CORE_LAYERS[CORE_LAYERS.len() - 1]),
    );
    let rel = |path: &str| path.trim_start_matches("shared/core/src/").to_owned();
    let mut planted: BTreeMap<String, String> = sources.clone();
    let plant = |text: &mut String, module: &str| {
        text.push_str(&format!("\nuse crate::{module}::Planted;\n"));
        text.lines().count()
    };
    let low_text = planted.get_mut(&rel(&low.path)).expect("low file");
    let line = plant(low_text, &high.module[0]);
    plant(
        planted.get_mut(&rel(&high.path)).expect("high file"),
        &low.module[0],
    );
    let after = Analysis::of_sources("shared/core/src", &planted);

    let expected = format!(
        "{}:{line}: imports crate::{}::Planted (layer 1 {} -> layer {} {})",
        low.path,
        high.module[0],
        low.module[0],
        CORE_LAYERS.len(),
        high.module[0]
    );
    let upward: Vec<String> = after
        .upward_imports(CORE_LAYERS)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(upward.contains(&expected), "{expected} not in {upward:#?}");
    assert!(
        after
            .file_cycles()
            .iter()
            .any(|c| c.members.contains(&low.path) && c.members.contains(&high.path)),
        "no cycle through {} and {}",
        low.path,
        high.path
    );
}

/// The rows of the numbered table in docs/design.md's section `heading`: each row's second cell,
/// split at commas, backticks trimmed.
fn drawn_layers(heading: &str) -> Vec<Vec<String>> {
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let section = design
        .split(&format!("\n## {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/design.md has a {heading} section"));
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    section
        .lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix('|')?.split('|').map(str::trim);
            cells.next()?.parse::<usize>().ok()?;
            let names = cells.next()?;
            Some(
                names
                    .split(',')
                    .map(|m| m.trim().trim_matches('`').to_owned())
                    .collect(),
            )
        })
        .collect()
}

fn owned(layers: &[&[&str]]) -> Vec<Vec<String>> {
    layers
        .iter()
        .map(|layer| layer.iter().map(|m| (*m).to_owned()).collect())
        .collect()
}

/// docs/design.md draws the layers the tests check: its "Crates" table names the crates of
/// [`CRATE_LAYERS`] and its "Inside the floor crate" table the modules of [`CORE_LAYERS`], row by
/// row, lowest first.
#[test]
fn docs_design_draws_the_layers_the_architecture_test_checks() {
    assert_eq!(
        drawn_layers("Crates"),
        owned(CRATE_LAYERS),
        "docs/design.md's Crates table and CRATE_LAYERS disagree"
    );
    assert_eq!(
        drawn_layers("Inside the floor crate"),
        owned(CORE_LAYERS),
        "docs/design.md's floor-crate table and CORE_LAYERS disagree"
    );
}

#[test]
fn every_crate_depends_only_on_crates_below_it() {
    let manifests = manifests(&root()).expect("the workspace's manifests");
    assert!(manifests.len() >= 15, "{} manifests", manifests.len());
    let upward = upward_dependencies(&manifests, CRATE_LAYERS);
    assert!(
        upward.is_empty(),
        "dependencies that do not point down CRATE_LAYERS (docs/design.md \"Crates\"):\n{}",
        upward
            .iter()
            .map(|u| format!("  {u}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let unlayered = unlayered(&manifests, CRATE_LAYERS);
    assert!(
        unlayered.is_empty(),
        "crates in no layer of CRATE_LAYERS (place them, and in docs/design.md): {unlayered:?}"
    );
}

/// The check can fail: the floor crate made to depend on the engine (up), and the GitHub client
/// on the archive (a crate of its own layer), are both reported with their manifests.
#[test]
fn a_planted_upward_dependency_is_caught() {
    let mut planted = manifests(&root()).expect("the workspace's manifests");
    for (from, to) in [
        ("syncplane-core", "syncplane-engine"),
        ("syncplane-github", "syncplane-archive"),
    ] {
        planted
            .iter_mut()
            .find(|m| m.name == from)
            .expect("the crate")
            .depends_on
            .push(to.to_owned());
    }
    let upward: Vec<String> = upward_dependencies(&planted, CRATE_LAYERS)
        .iter()
        .map(ToString::to_string)
        .collect();
    for expected in [
        "shared/core/Cargo.toml: syncplane-core (layer 2) depends on syncplane-engine (layer 5)",
        "shared/github/Cargo.toml: syncplane-github (layer 3) depends on syncplane-archive (layer 3)",
    ] {
        assert!(
            upward.iter().any(|u| u == expected),
            "{expected} not in {upward:#?}"
        );
    }
}

#[test]
fn each_lambda_function_depends_only_on_its_surface() {
    let manifests = manifests(&root()).expect("the workspace's manifests");
    for (function, allowed) in FUNCTION_SURFACES {
        let m = manifests
            .iter()
            .find(|m| m.name == *function)
            .unwrap_or_else(|| panic!("no function {function}"));
        assert!(layer_of(CRATE_LAYERS, function).is_some());
        let extra: Vec<&String> = m
            .depends_on
            .iter()
            .filter(|d| !allowed.contains(&d.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{function} depends on {extra:?} beyond its surface {allowed:?}"
        );
    }
}

/// Issue 33: the ingest function builds without the engine, the GitHub client, the job queue's
/// SQS client or the document parsers, which it never calls.
#[test]
fn the_ingest_function_builds_without_the_engine_the_github_client_or_sqs() {
    let built = resolved_packages(&root(), "ingest").expect("cargo tree");
    assert!(
        built.iter().any(|p| p == "syncplane-ingest"),
        "the tree lists the surface: {built:?}"
    );
    for absent in [
        "syncplane-engine",
        "syncplane-github",
        "syncplane-worker",
        "aws-sdk-sqs",
        "comrak",
        "ammonia",
        "jsonwebtoken",
    ] {
        assert!(
            !built.iter().any(|p| p == absent),
            "the ingest function builds {absent}"
        );
    }
}

/// Issue 33: a function that only submits jobs (the webhook, the tick) builds without the worker,
/// the engine and the document pipeline, so an engine change relinks it no more; its
/// `inline-jobs` feature (local runs) brings the worker back.
#[test]
fn the_webhook_and_tick_functions_build_without_the_engine_unless_they_run_jobs_inline() {
    for function in INLINE_JOBS {
        let built = resolved_packages(&root(), function).expect("cargo tree");
        assert!(
            built.iter().any(|p| p == "syncplane-jobs"),
            "{function}: the tree lists the jobs: {built:?}"
        );
        for absent in ["syncplane-engine", "syncplane-worker", "comrak", "ammonia"] {
            assert!(
                !built.iter().any(|p| p == absent),
                "the {function} function builds {absent}"
            );
        }
        let inline =
            resolved_packages_with(&root(), function, &["inline-jobs"]).expect("cargo tree");
        for present in ["syncplane-worker", "syncplane-engine"] {
            assert!(
                inline.iter().any(|p| p == present),
                "{function} with inline-jobs builds {present}: {inline:?}"
            );
        }
    }
}
