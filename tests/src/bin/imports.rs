//! `cargo run -p syncplane-tests --features tools --bin imports [--edges] [ROOT]`: the import analysis of issue 19
//! for every crate of the workspace (ROOT defaults to this repository): file cycles, module
//! groups that import each other, and, for `shared/src`, the imports that run up the layers of
//! [`SHARED_LAYERS`] (docs/design.md). Exits 1 when it finds any. `--edges` lists every import
//! between files too.

use std::path::PathBuf;
use std::process::ExitCode;

use syncplane_tests::imports::{Analysis, SHARED_LAYERS, workspace_crates};

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
    if src == "shared/src" {
        let upward = analysis.upward_imports(SHARED_LAYERS);
        println!("  upward imports (SHARED_LAYERS): {}", upward.len());
        for u in &upward {
            println!("    {u}");
        }
        let unlayered = analysis.unlayered(SHARED_LAYERS);
        println!("  modules in no layer: {}", unlayered.len());
        if !unlayered.is_empty() {
            println!("    {}", unlayered.join(", "));
        }
        found.upward = upward.len();
        found.unlayered = unlayered.len();
    }
    Ok(found)
}

fn main() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let edges = args.iter().any(|a| a == "--edges");
    let root = args
        .iter()
        .find(|a| *a != "--edges")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."));
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
    let clean = total.file_cycles + total.group_cycles + total.upward + total.unlayered == 0;
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
