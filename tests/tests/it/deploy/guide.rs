//! The deploy guide (issue 21 point 15): docs/deploy.md documents every parameter template.yaml
//! declares (with its default), every secret reference docs/configuration.md lists, every
//! variable scripts/lambda-deploy.sh reads and every prerequisite; samconfig.example.toml names
//! only parameters the template declares, and every required one.

use std::collections::{BTreeMap, BTreeSet};

use super::repo_file;
use super::template::template;

const GUIDE: &str = "docs/deploy.md";

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The rows (cells trimmed) of the first markdown table after the line containing `marker`.
fn table_after(doc: &str, marker: &str) -> Vec<Vec<String>> {
    let start = doc
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in the document"));
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
            inner.split('|').map(|c| c.trim().to_owned()).collect()
        })
        .collect()
}

/// template.yaml's parameters: name and default (`None`: none, so it must be given).
fn template_parameters() -> BTreeMap<String, Option<String>> {
    let t = template();
    let params = t["Parameters"].as_mapping().expect("a Parameters block");
    params
        .iter()
        .map(|(name, p)| {
            let default = match &p["Default"] {
                serde_yaml_ng::Value::Null => None,
                serde_yaml_ng::Value::String(s) => Some(s.clone()),
                serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
                other => panic!("{name:?}: an unexpected default {other:?}"),
            };
            (name.as_str().unwrap().to_owned(), default)
        })
        .collect()
}

/// A section of the guide: from its heading to the next one of the same level.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("{GUIDE} has no {heading:?}"));
    let rest = &doc[start + 1..];
    let end = rest[heading.len()..]
        .find("\n## ")
        .map_or(rest.len(), |i| i + heading.len());
    &rest[..end]
}

#[test]
fn the_deploy_guide_documents_every_template_parameter() {
    let declared = template_parameters();
    assert!(
        declared.contains_key("SyncSearchConfig") && declared.len() >= 20,
        "the template's parameters: {declared:?}"
    );
    let guide = read(GUIDE);
    let rows = table_after(&guide, "<!-- template parameters:");
    let documented: BTreeMap<String, String> = rows
        .iter()
        .map(|r| (r[0].trim_matches('`').to_owned(), r[1].clone()))
        .collect();
    let declared_names: BTreeSet<&String> = declared.keys().collect();
    let documented_names: BTreeSet<&String> = documented.keys().collect();
    assert_eq!(
        declared_names, documented_names,
        "{GUIDE}'s parameter table names exactly the template's parameters"
    );
    for (name, default) in &declared {
        let expected = match default.as_deref() {
            None => "none".to_owned(),
            Some("") => "empty".to_owned(),
            Some(value) => format!("`{value}`"),
        };
        assert_eq!(documented[name], expected, "{GUIDE}: the default of {name}");
    }
}

/// `parameter_overrides` of the example: each "Name=Value" string's name.
fn samconfig_overrides() -> (toml::Value, Vec<String>) {
    let text = read("samconfig.example.toml");
    let config: toml::Value = toml::from_str(&text).expect("samconfig.example.toml is TOML");
    let overrides = config["default"]["deploy"]["parameters"]["parameter_overrides"]
        .as_array()
        .expect("parameter_overrides: a list of \"Name=Value\" strings")
        .iter()
        .map(|v| {
            let item = v.as_str().expect("each override a string");
            let (name, _) = item
                .split_once('=')
                .unwrap_or_else(|| panic!("{item:?}: not Name=Value"));
            name.to_owned()
        })
        .collect();
    (config, overrides)
}

#[test]
fn the_samconfig_example_names_only_parameters_the_template_declares_and_every_required_one() {
    let declared = template_parameters();
    let (config, named) = samconfig_overrides();
    let unknown: Vec<_> = named
        .iter()
        .filter(|n| !declared.contains_key(*n))
        .collect();
    assert!(
        unknown.is_empty(),
        "samconfig.example.toml names parameters template.yaml does not declare: {unknown:?}"
    );
    let once: BTreeSet<&String> = named.iter().collect();
    assert_eq!(once.len(), named.len(), "each parameter once: {named:?}");
    let missing: Vec<_> = declared
        .iter()
        .filter(|(name, default)| default.is_none() && !named.contains(name))
        .map(|(name, _)| name)
        .collect();
    assert!(
        missing.is_empty(),
        "samconfig.example.toml leaves out required parameters: {missing:?}"
    );
    // Without the beta feature `sam build` stops to ask about rust-cargolambda.
    assert_eq!(
        config["default"]["build"]["parameters"]["beta_features"].as_bool(),
        Some(true)
    );
    let gitignore = read(".gitignore");
    assert!(
        gitignore.lines().any(|l| l.trim() == "samconfig.toml"),
        "a copied samconfig.toml names an account's resources: .gitignore keeps it out"
    );
}

#[test]
fn the_deploy_guide_gives_every_secret_reference_of_configuration_md_and_its_parameter() {
    let guide = read(GUIDE);
    let secrets = section(&guide, "## 3. Secrets");
    let configuration = read("docs/configuration.md");
    let references: Vec<String> = table_after(&configuration, "<!-- secret references:")
        .into_iter()
        .map(|row| row[1].trim_matches('`').to_owned())
        .collect();
    assert!(
        references.len() >= 6 && references.iter().all(|r| r.ends_with("_SECRET_ARN")),
        "configuration.md's secret references: {references:?}"
    );
    for reference in &references {
        assert!(
            secrets.contains(&format!("`{reference}`")),
            "{GUIDE}'s Secrets section names {reference}"
        );
    }
    for name in template_parameters().keys() {
        if name.ends_with("SecretArn") {
            assert!(
                secrets.contains(&format!("`{name}`")),
                "{GUIDE}'s Secrets section says how to make the secret of {name}"
            );
        }
    }
    for command in ["aws secretsmanager create-secret", "file://", "umask 077"] {
        assert!(secrets.contains(command), "{GUIDE}: {command}");
    }
}

#[test]
fn the_deploy_guide_lists_every_prerequisite_and_every_variable_of_the_deploy_script() {
    let guide = read(GUIDE);
    let prerequisites = section(&guide, "## 1. Prerequisites");
    for tool in [
        "cargo-lambda",
        "zig",
        "rustup target add aarch64-unknown-linux-gnu",
        "AWS CLI",
        "SAM CLI",
        "beta_features = true",
    ] {
        assert!(
            prerequisites.contains(tool),
            "{GUIDE}'s prerequisites name {tool}"
        );
    }
    let script = read("scripts/lambda-deploy.sh");
    let mut read_by_script = BTreeSet::new();
    for (at, _) in script.match_indices("${") {
        let name: String = script[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || *c == '_')
            .collect();
        if name.starts_with("SYNCPLANE_") {
            read_by_script.insert(name);
        }
    }
    assert!(
        read_by_script.contains("SYNCPLANE_FUNCTION_PREFIX"),
        "{read_by_script:?}"
    );
    for name in &read_by_script {
        assert!(
            guide.contains(&format!("`{name}`")),
            "{GUIDE} documents {name} (scripts/lambda-deploy.sh reads it)"
        );
    }
    let provision = section(&guide, "## 7. The first org, user and device token");
    for needed in [
        "aws lambda invoke",
        "\"action\":\"provision\"",
        "MigrateFunctionName",
    ] {
        assert!(provision.contains(needed), "{GUIDE} section 7: {needed}");
    }
}
