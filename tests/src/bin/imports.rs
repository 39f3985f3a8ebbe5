//! `cargo run -p syncplane-tests --features tools --bin imports [--edges] [--crates] [ROOT]`: the
//! import analysis of issues 19 and 33 for every crate of the workspace (ROOT defaults to this
//! repository): each crate's dependencies on the workspace's crates by layer ([`CRATE_LAYERS`],
//! with any that does not point down), file cycles, module groups that import each other, and,
//! for `shared/core/src`, the imports that run up the layers of [`CORE_LAYERS`] (docs/design.md).
//! Exits 1 when it finds any. `--edges` lists every import between files too; `--crates` prints
//! only the crates, the picture of docs/design.md "Crates".

use std::path::PathBuf;
use std::process::ExitCode;

use syncplane_tests::crates::{CRATE_LAYERS, layer_of, manifests, upward_dependencies};
use syncplane_tests::imports::{Analysis, CORE_LAYERS, workspace_crates};

/// What one crate contributes to the total.
#[derive(Default)]
struct Found {
    file_cycles: usize,
    group_cycles: usize,
    upward: usize,
    unlayered: usize,
}

fn report(root: &std::path::Path, src: &str, edges: bool) -> anyhow::Result<Found> {
    let analysis = Analysis::of_dir(root, src)?;
    println!(
        "{src}: {} files, {} imports between them",
        analysis.files.len(),
        analysis.edges.len()
    );
    if edges {
        for edge in &analysis.edges {
            println!("    {edge}");
        }
    }
    let files = analysis.file_cycles();
    println!("  file cycles: {}", files.len());
    for cycle in &files {
        println!("    {}", cycle.to_string().replace('\n', "\n    "));
    }
    let groups = analysis.group_cycles();
    println!("  module groups that import each other: {}", groups.len());
    for cycle in &groups {
        println!("    {}", cycle.to_string().replace('\n', "\n    "));
    }
    let mut found = Found {
        file_cycles: files.len(),
        group_cycles: groups.len(),
        ..Found::default()
    };
    if src == "shared/core/src" {
        let upward = analysis.upward_imports(CORE_LAYERS);
        println!("  upward imports (CORE_LAYERS): {}", upward.len());
        for u in &upward {
            println!("    {u}");
        }
        let unlayered = analysis.unlayered(CORE_LAYERS);
        println!("  modules in no layer: {}", unlayered.len());
        if !unlayered.is_empty() {
            println!("    {}", unlayered.join(", "));
        }
        found.upward = upward.len();
        found.unlayered = unlayered.len();
    }
    Ok(found)
}

/// The crates by layer, highest first, each with the workspace crates it depends on; the number
/// of dependencies that do not point down.
fn crates(root: &std::path::Path) -> anyhow::Result<usize> {
    let mut manifests = manifests(root)?;
    manifests.sort_by_key(|m| {
        (
            std::cmp::Reverse(layer_of(CRATE_LAYERS, &m.name)),
            m.name.clone(),
        )
    });
    for m in &manifests {
        let layer = layer_of(CRATE_LAYERS, &m.name).map_or("-".to_owned(), |l| l.to_string());
        let mut deps = m.depends_on.clone();
        deps.sort();
        let deps = if deps.is_empty() {
            "(no crate of the workspace)".to_owned()
        } else {
            deps.join(", ")
        };
        println!("{layer:>2} {:<20} ──► {deps}", m.name);
    }
    let upward = upward_dependencies(&manifests, CRATE_LAYERS);
    println!("dependencies that do not point down: {}", upward.len());
    for u in &upward {
        println!("    {u}");
    }
    Ok(upward.len())
}

fn main() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let edges = args.iter().any(|a| a == "--edges");
    let root = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
    let upward_crates = crates(&root)?;
    if args.iter().any(|a| a == "--crates") {
        return Ok(if upward_crates == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let mut total = Found::default();
    for src in workspace_crates(&root)? {
        let found = report(&root, &src, edges)?;
        total.file_cycles += found.file_cycles;
        total.group_cycles += found.group_cycles;
        total.upward += found.upward;
        total.unlayered += found.unlayered;
    }
    println!(
        "total: {} file cycles, {} module-group cycles, {} upward imports, {} modules in no layer",
        total.file_cycles, total.group_cycles, total.upward, total.unlayered
    );
    let clean =
        upward_crates + total.file_cycles + total.group_cycles + total.upward + total.unlayered
            == 0;
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
