//! Issue 19's one-way layers, checked on the source: no file imports another that imports it
//! back (in any crate of the workspace), no module group imports another that imports it back,
//! and no import in `shared/src` runs up the layers docs/design.md draws
//! ([`SHARED_LAYERS`]). Every failure names the file and the line of the import. The analysis
//! is `syncplane_tests::imports` (`cargo run -p syncplane-tests --features tools --bin imports` prints it all).

use std::collections::BTreeMap;
use std::path::PathBuf;

use syncplane_tests::imports::{Analysis, Cycle, SHARED_LAYERS, read_sources, workspace_crates};

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
fn shared_has_no_import_cycles_between_files() {
    assert_no_file_cycles("shared/src");
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
    let named = ["shared/src", "cli/src", "clients/agent-sync/src"];
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
fn no_import_runs_up_the_layers_docs_design_draws() {
    let upward = analysis("shared/src").upward_imports(SHARED_LAYERS);
    assert!(
        upward.is_empty(),
        "{} import(s) in shared/src run up the layers (SHARED_LAYERS, docs/design.md):\n{}",
        upward.len(),
        upward
            .iter()
            .map(|u| format!("  {u}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_shared_module_has_a_layer() {
    let unlayered = analysis("shared/src").unlayered(SHARED_LAYERS);
    assert!(
        unlayered.is_empty(),
        "modules of shared/src in no layer of SHARED_LAYERS (place them, and in docs/design.md): {unlayered:?}"
    );
}

/// The checks can fail: an import planted from the lowest layer into the highest (and back) is
/// reported with its file and line, and the two files as a cycle.
#[test]
fn a_planted_upward_import_and_cycle_are_caught() {
    let sources = read_sources(&root().join("shared/src")).expect("shared/src");
    let today = Analysis::of_sources("shared/src", &sources);
    let in_layer = |layer: &[&str]| {
        today
            .files
            .iter()
            .find(|f| f.module.len() == 1 && f.group().is_some_and(|g| layer.contains(&g)))
            .expect("a module in the layer")
            .clone()
    };
    let (low, high) = (
        in_layer(SHARED_LAYERS[0]),
        in_layer(SHARED_LAYERS[SHARED_LAYERS.len() - 1]),
    );
    let rel = |path: &str| path.trim_start_matches("shared/src/").to_owned();
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
    let after = Analysis::of_sources("shared/src", &planted);

    let expected = format!(
        "{}:{line}: imports crate::{}::Planted (layer 1 {} -> layer {} {})",
        low.path,
        high.module[0],
        low.module[0],
        SHARED_LAYERS.len(),
        high.module[0]
    );
    let upward: Vec<String> = after
        .upward_imports(SHARED_LAYERS)
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

/// docs/design.md draws the layers the test checks: its "Layers" table, row by row, names the
/// modules of [`SHARED_LAYERS`], lowest first.
#[test]
fn docs_design_draws_the_layers_the_architecture_test_checks() {
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    let section = design
        .split("\n## Layers\n")
        .nth(1)
        .expect("docs/design.md has a Layers section");
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let drawn: Vec<Vec<String>> = section
        .lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix('|')?.split('|').map(str::trim);
            cells.next()?.parse::<usize>().ok()?;
            let modules = cells.next()?;
            Some(
                modules
                    .split(',')
                    .map(|m| m.trim().trim_matches('`').to_owned())
                    .collect(),
            )
        })
        .collect();
    let code: Vec<Vec<String>> = SHARED_LAYERS
        .iter()
        .map(|layer| layer.iter().map(|m| (*m).to_owned()).collect())
        .collect();
    assert_eq!(
        drawn, code,
        "docs/design.md's Layers table and SHARED_LAYERS disagree"
    );
}
