//! The workspace's crates as layers (issue 33, docs/design.md "Crates"): each crate's
//! dependencies on the workspace's own crates, read from its `Cargo.toml`, must point down
//! [`CRATE_LAYERS`]; a crate never depends on one of its own layer or above. Cargo then makes an
//! upward import impossible: a module cannot name a crate its manifest does not list. The tests
//! and their fake GitHub are test support and stand outside the layers.

use std::fmt;
use std::path::Path;

use crate::imports::workspace_crates;

/// The workspace's crates, lowest first. Crates of one layer are independent of each other.
pub const CRATE_LAYERS: &[&[&str]] = &[
    &["syncplane-contract", "syncplane-row-derive"],
    &["syncplane-core", "syncplane-agent"],
    &[
        "syncplane-github",
        "syncplane-archive",
        "syncplane-accounts",
    ],
    &["syncplane-runs"],
    &["syncplane-jobs", "syncplane-engine"],
    &["syncplane-worker"],
    &["syncplane-ingest", "syncplane-api", "syncplane-webhook"],
    &[
        "webhook", "sync-api", "ingest", "tick", "worker", "migrate", "shared",
    ],
    &["syncplane-cli"],
];

/// What each Lambda function may depend on of the workspace: its surface's crate and what that
/// stands on, nothing else (the ingest function builds without the engine or the GitHub client).
/// The webhook and the tick list the worker as an optional dependency, behind their
/// `inline-jobs` feature ([`INLINE_JOBS`]): by default they build without it and the engine.
pub const FUNCTION_SURFACES: &[(&str, &[&str])] = &[
    ("ingest", &["syncplane-core", "syncplane-ingest"]),
    (
        "webhook",
        &[
            "syncplane-core",
            "syncplane-jobs",
            "syncplane-webhook",
            "syncplane-worker",
        ],
    ),
    (
        "sync-api",
        &[
            "syncplane-core",
            "syncplane-jobs",
            "syncplane-worker",
            "syncplane-api",
        ],
    ),
    (
        "tick",
        &["syncplane-core", "syncplane-jobs", "syncplane-worker"],
    ),
    (
        "worker",
        &[
            "syncplane-core",
            "syncplane-engine",
            "syncplane-jobs",
            "syncplane-worker",
        ],
    ),
    ("migrate", &["syncplane-core", "syncplane-accounts"]),
];

/// The functions that only submit jobs: by default they build without the worker and the engine
/// (deployed, they queue every job); their `inline-jobs` feature adds the worker for local runs.
pub const INLINE_JOBS: &[&str] = &["webhook", "tick"];

/// One workspace crate: its package name, its manifest (as displayed) and the workspace crates
/// it depends on (`[dependencies]` and `[build-dependencies]`; dev-dependencies build tests only).
#[derive(Debug, Clone)]
pub struct Manifest {
    pub name: String,
    pub path: String,
    pub depends_on: Vec<String>,
}

/// A dependency that does not point down the layers.
#[derive(Debug, Clone)]
pub struct Upward {
    pub manifest: String,
    pub from: String,
    pub to: String,
    /// 1-based, lowest first.
    pub from_layer: usize,
    pub to_layer: usize,
}

impl fmt::Display for Upward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (layer {}) depends on {} (layer {})",
            self.manifest, self.from, self.from_layer, self.to, self.to_layer
        )
    }
}

/// The manifests of the workspace's members under `root`, test support left out.
pub fn manifests(root: &Path) -> anyhow::Result<Vec<Manifest>> {
    let mut read = Vec::new();
    for src in workspace_crates(root)? {
        let dir = src.trim_end_matches("/src");
        let path = format!("{dir}/Cargo.toml");
        let manifest: toml::Table = std::fs::read_to_string(root.join(&path))?.parse()?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .ok_or_else(|| anyhow::anyhow!("{path} has no package name"))?
            .to_owned();
        let mut depends_on = Vec::new();
        for table in ["dependencies", "build-dependencies"] {
            if let Some(deps) = manifest.get(table).and_then(|d| d.as_table()) {
                depends_on.extend(deps.keys().cloned());
            }
        }
        read.push(Manifest {
            name,
            path,
            depends_on,
        });
    }
    let members: Vec<String> = read.iter().map(|m| m.name.clone()).collect();
    for manifest in &mut read {
        manifest.depends_on.retain(|d| members.contains(d));
    }
    Ok(read)
}

/// The 1-based layer of `name`, if it has one.
pub fn layer_of(layers: &[&[&str]], name: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&name)).map(|i| i + 1)
}

/// Every dependency on a crate of the same layer or a higher one.
pub fn upward_dependencies(manifests: &[Manifest], layers: &[&[&str]]) -> Vec<Upward> {
    let mut found = Vec::new();
    for m in manifests {
        let Some(from_layer) = layer_of(layers, &m.name) else {
            continue;
        };
        for dep in &m.depends_on {
            match layer_of(layers, dep) {
                Some(to_layer) if to_layer < from_layer => {}
                to_layer => found.push(Upward {
                    manifest: m.path.clone(),
                    from: m.name.clone(),
                    to: dep.clone(),
                    from_layer,
                    to_layer: to_layer.unwrap_or(0),
                }),
            }
        }
    }
    found
}

/// Workspace crates in no layer.
pub fn unlayered(manifests: &[Manifest], layers: &[&[&str]]) -> Vec<String> {
    manifests
        .iter()
        .filter(|m| layer_of(layers, &m.name).is_none())
        .map(|m| m.name.clone())
        .collect()
}

/// Every package `package` builds with, its dependencies' dependencies included (normal
/// dependencies, this machine's platform): `cargo tree`, offline, from the lock file.
pub fn resolved_packages(root: &Path, package: &str) -> anyhow::Result<Vec<String>> {
    resolved_packages_with(root, package, &[])
}

/// [`resolved_packages`] with `features` of `package` turned on.
pub fn resolved_packages_with(
    root: &Path,
    package: &str,
    features: &[&str],
) -> anyhow::Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = std::process::Command::new(cargo)
        .current_dir(root)
        .args([
            "tree",
            "--locked",
            "--offline",
            "-p",
            package,
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--format",
            "{p}",
            "--features",
            &features.join(","),
        ])
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = String::from_utf8(out.stdout)?
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
}
