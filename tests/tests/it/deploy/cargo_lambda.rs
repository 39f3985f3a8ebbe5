//! `cargo lambda deploy` per function (issue 13 point 2): every function crate carries
//! `[package.metadata.lambda.deploy]` agreeing with template.yaml (memory, timeout, tracing), and
//! what its deployment needs beyond that (`[package.metadata.syncplane]`: variables, VPC, role
//! permissions) agrees with what the template gives the same function. Only the function crates
//! are deploy targets: the CLI, the tests (benchmarks, fake GitHub) carry no Lambda metadata.

use toml::Value;

use super::repo_file;
use super::template::{function_of, function_prop, functions, template};

fn manifest(path: &str) -> Value {
    let text = std::fs::read_to_string(repo_file(path)).unwrap();
    toml::from_str(&text).unwrap()
}

/// The crates under functions/.
fn function_crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo_file("functions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn metadata(krate: &str) -> (Value, Value) {
    let m = manifest(&format!("functions/{krate}/Cargo.toml"));
    let meta = &m["package"]["metadata"];
    (meta["lambda"]["deploy"].clone(), meta["syncplane"].clone())
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn each_function_deploys_with_the_templates_memory_timeout_and_tracing() {
    let t = template();
    for krate in function_crates() {
        let (deploy, _) = metadata(&krate);
        let (name, _) = function_of(&t, &krate);
        let memory = function_prop(&t, &name, "MemorySize").as_i64().unwrap();
        let timeout = function_prop(&t, &name, "Timeout").as_i64().unwrap();
        assert_eq!(
            deploy["memory"].as_integer(),
            Some(memory),
            "{krate} memory"
        );
        assert_eq!(
            deploy["timeout"].as_integer(),
            Some(timeout),
            "{krate} timeout"
        );
        let tracing = function_prop(&t, &name, "Tracing").as_str().unwrap();
        assert!(
            deploy["tracing"]
                .as_str()
                .unwrap()
                .eq_ignore_ascii_case(tracing),
            "{krate} tracing"
        );
        let retention = t["Parameters"]["LogRetentionDays"]["Default"].as_i64();
        assert_eq!(deploy["log_retention"].as_integer(), retention, "{krate}");
        // Values come from .env.deploy (never committed); constants only here.
        assert_eq!(deploy["env_file"].as_str(), Some(".env.deploy"));
        for var in strings(&deploy["env_var"]) {
            let (key, value) = var.split_once('=').expect("KEY=VALUE");
            let global = &t["Globals"]["Function"]["Environment"]["Variables"][key];
            assert_eq!(
                global.as_str(),
                Some(value),
                "{krate}: {key} as in the template"
            );
        }
    }
}

#[test]
fn each_function_names_the_variables_vpc_and_permissions_the_template_gives_it() {
    let t = template();
    let globals = &t["Globals"]["Function"]["Environment"]["Variables"];
    for krate in function_crates() {
        let (_, needs) = metadata(&krate);
        let (_, f) = function_of(&t, &krate);
        for var in strings(&needs["env"]) {
            assert!(
                !globals[var.as_str()].is_null(),
                "{krate}: {var} is set by the template"
            );
            assert!(
                !shared::config::secrets::SECRET_VARIABLES.contains(&var.as_str())
                    || var == "DATABASE_URL",
                "{krate}: {var} is a secret: name its _SECRET_ARN"
            );
        }
        assert_eq!(
            needs["vpc"].as_bool(),
            Some(true),
            "{krate} reaches Postgres"
        );
        assert!(!t["Globals"]["Function"]["VpcConfig"].is_null());

        let permissions = strings(&needs["permissions"]);
        let policies = serde_yaml_ng::to_string(&f["Properties"]["Policies"]).unwrap();
        assert_eq!(
            permissions.contains(&"sqs:SendMessage".to_owned()),
            policies.contains("SQSSendMessagePolicy"),
            "{krate}: queue send permission as in the template"
        );
        assert_eq!(
            permissions.contains(&"secretsmanager:GetSecretValue".to_owned()),
            policies.contains("SecretsReadPolicy"),
            "{krate}: secrets read permission as in the template"
        );
        let polls_sqs = f["Properties"]["Events"]
            .as_mapping()
            .is_some_and(|e| e.values().any(|e| e["Type"] == "SQS"));
        assert_eq!(
            permissions.contains(&"sqs:ReceiveMessage".to_owned()),
            polls_sqs,
            "{krate}: an SQS event source needs receive and delete"
        );
        assert!(needs["wiring"].as_str().is_some_and(|w| !w.is_empty()));
    }
}

#[test]
fn each_http_functions_wiring_names_every_route_the_template_gives_it() {
    let t = template();
    for krate in function_crates() {
        let (_, needs) = metadata(&krate);
        let wiring = needs["wiring"].as_str().unwrap();
        let (_, f) = function_of(&t, &krate);
        let Some(events) = f["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for e in events.values().filter(|e| e["Type"] == "HttpApi") {
            let path = e["Properties"]["Path"].as_str().unwrap();
            // Whole route names: "/api/repos" must not pass on "/api/repos/{owner}/{name}".
            let named = wiring
                .split([',', ' '])
                .any(|word| word.trim_matches(|c: char| c == '.' || c.is_whitespace()) == path);
            assert!(named, "{krate}: wiring names {path}: {wiring}");
        }
    }
}

#[test]
fn the_deploy_env_example_sets_every_variable_a_function_names() {
    let text = std::fs::read_to_string(repo_file(".env.deploy.example")).unwrap();
    let set: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .collect();
    for krate in function_crates() {
        let (_, needs) = metadata(&krate);
        for var in strings(&needs["env"]) {
            assert!(
                set.contains(&var.as_str()),
                "{krate}: .env.deploy.example sets {var}"
            );
        }
    }
    // Each crate's role grants Secrets Manager reads only: its secrets are _SECRET_ARN references.
    assert!(
        !set.iter().any(|k| k.ends_with("_PARAMETER")),
        "the example's secrets are the form the roles can read"
    );
}

#[test]
fn only_the_functions_are_deploy_targets() {
    let t = template();
    let mut binaries: Vec<String> = functions(&t)
        .iter()
        .map(|(_, r)| {
            r["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    binaries.sort();
    assert_eq!(
        binaries,
        function_crates(),
        "one crate per template function"
    );
    for other in [
        "cli/Cargo.toml",
        "tests/Cargo.toml",
        "shared/Cargo.toml",
        "Cargo.toml",
    ] {
        let m = manifest(other);
        for section in ["package", "workspace"] {
            let lambda = m
                .get(section)
                .and_then(|p| p.get("metadata"))
                .and_then(|m| m.get("lambda"));
            assert!(lambda.is_none(), "{other}: no {section} Lambda metadata");
        }
    }
    // The deploy script deploys exactly the crates of functions/.
    let script = std::fs::read_to_string(repo_file("scripts/lambda-deploy.sh")).unwrap();
    assert!(script.contains("functions/*/"));
}
