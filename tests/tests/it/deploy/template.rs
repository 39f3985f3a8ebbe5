//! template.yaml (docs/design.md "Shape", "Jobs"): what `cfn-lint` does not catch. A misspelled
//! `ReportBatchItemFailures` or a visibility timeout below the worker's timeout both deploy
//! cleanly and then re-run whole batches or run one job on two workers at once.

use serde_yaml_ng::Value;

use super::repo_file;

pub(super) fn template() -> Value {
    let text = std::fs::read_to_string(repo_file("template.yaml")).unwrap();
    // CloudFormation short forms (!Ref, !GetAtt, !Sub) parse as tagged values.
    serde_yaml_ng::from_str(&text).unwrap()
}

/// The value of a tagged (`!Ref X`) or long-form (`{"Ref": X}`) intrinsic.
pub(super) fn intrinsic<'a>(v: &'a Value, name: &str) -> Option<&'a Value> {
    match v {
        Value::Tagged(t) if t.tag == name => Some(&t.value),
        Value::Mapping(m) if m.len() == 1 => m.get(format!("Fn::{name}")).or(m.get(name)),
        _ => None,
    }
}

pub(super) fn resource<'a>(t: &'a Value, name: &str) -> &'a Value {
    &t["Resources"][name]
}

/// A function's property, falling back to `Globals.Function`.
pub(super) fn function_prop<'a>(t: &'a Value, function: &str, prop: &str) -> &'a Value {
    let own = &resource(t, function)["Properties"][prop];
    if own.is_null() {
        &t["Globals"]["Function"][prop]
    } else {
        own
    }
}

pub(super) fn functions(t: &Value) -> Vec<(String, &Value)> {
    t["Resources"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
        .map(|(k, r)| (k.as_str().unwrap().to_owned(), r))
        .collect()
}

/// The function built from binary `bin`.
pub(super) fn function_of<'a>(t: &'a Value, bin: &str) -> (String, &'a Value) {
    functions(t)
        .into_iter()
        .find(|(_, r)| r["Metadata"]["BuildProperties"]["Binary"] == bin)
        .unwrap_or_else(|| panic!("no function builds binary {bin}"))
}

/// The worker's SQS event source.
fn worker_sqs_event(t: &Value) -> &Value {
    let (_, worker) = function_of(t, "worker");
    worker["Properties"]["Events"]
        .as_mapping()
        .unwrap()
        .values()
        .find(|e| e["Type"] == "SQS")
        .expect("the worker has an SQS event source")
}

#[test]
fn the_worker_reports_partial_batch_failures() {
    let t = template();
    let types = worker_sqs_event(&t)["Properties"]["FunctionResponseTypes"]
        .as_sequence()
        .expect("FunctionResponseTypes is a list");
    assert_eq!(
        types,
        &vec![Value::from("ReportBatchItemFailures")],
        "spelled exactly as Lambda expects, or whole batches are retried"
    );
}

#[test]
fn the_queue_visibility_timeout_exceeds_the_worker_timeout() {
    let t = template();
    let queue_ref = &worker_sqs_event(&t)["Properties"]["Queue"];
    let queue_name = intrinsic(queue_ref, "GetAtt")
        .and_then(Value::as_str)
        .and_then(|s| s.strip_suffix(".Arn"))
        .expect("the event source names a queue of this template");
    let queue = resource(&t, queue_name);
    assert_eq!(queue["Type"], "AWS::SQS::Queue");
    let visibility = queue["Properties"]["VisibilityTimeout"].as_u64().unwrap();
    let (name, _) = function_of(&t, "worker");
    let timeout = function_prop(&t, &name, "Timeout").as_u64().unwrap();
    assert!(
        visibility > timeout,
        "visibility {visibility}s must exceed the worker's {timeout}s"
    );
    assert!(
        visibility >= 6 * timeout,
        "AWS advises six times the timeout"
    );
    // Long syncs: a full sync fans out, but one repository may still take minutes.
    assert_eq!(timeout, 900);
}

#[test]
fn poison_jobs_go_to_a_dead_letter_queue() {
    let t = template();
    let queue_ref = &worker_sqs_event(&t)["Properties"]["Queue"];
    let queue_name = intrinsic(queue_ref, "GetAtt")
        .and_then(Value::as_str)
        .and_then(|s| s.strip_suffix(".Arn"))
        .unwrap();
    let redrive = &resource(&t, queue_name)["Properties"]["RedrivePolicy"];
    let max = redrive["maxReceiveCount"]
        .as_u64()
        .expect("maxReceiveCount");
    assert!((1..=10).contains(&max), "maxReceiveCount {max}");
    let dlq = intrinsic(&redrive["deadLetterTargetArn"], "GetAtt")
        .and_then(Value::as_str)
        .and_then(|s| s.strip_suffix(".Arn"))
        .expect("the DLQ is a queue of this template");
    assert_ne!(dlq, queue_name);
    assert_eq!(resource(&t, dlq)["Type"], "AWS::SQS::Queue");
}

#[test]
fn each_function_is_a_cargo_lambda_arm64_binary_of_the_workspace() {
    let t = template();
    let fns = functions(&t);
    let mut bins: Vec<&str> = fns
        .iter()
        .map(|(_, r)| r["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap())
        .collect();
    bins.sort();
    assert_eq!(
        bins,
        ["ingest", "migrate", "sync-api", "tick", "webhook", "worker"]
    );
    for (name, r) in &fns {
        assert_eq!(r["Metadata"]["BuildMethod"], "rust-cargolambda", "{name}");
        let bin = r["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap();
        assert!(
            repo_file(&format!("functions/{bin}/Cargo.toml")).exists(),
            "{name} builds binary {bin}, a crate of functions/"
        );
        assert_eq!(function_prop(&t, name, "Runtime"), "provided.al2023");
        assert_eq!(function_prop(&t, name, "Handler"), "bootstrap");
        assert_eq!(
            function_prop(&t, name, "Architectures"),
            &Value::Sequence(vec!["arm64".into()])
        );
    }
}

#[test]
fn every_route_of_the_design_reaches_its_function() {
    let t = template();
    let expected = [
        ("POST", "/github/webhook", "webhook"),
        ("POST", "/github/webhook/{tenant}", "webhook"),
        ("POST", "/api/sync", "sync-api"),
        ("GET", "/api/repos", "sync-api"),
        ("GET", "/api/sync/runs", "sync-api"),
        ("GET", "/api/sync/runs/{id}", "sync-api"),
        ("GET", "/api/search", "sync-api"),
        ("GET", "/api/repos/{owner}/{name}", "sync-api"),
        ("GET", "/api/repos/{owner}/{name}/documents", "sync-api"),
        (
            "GET",
            "/api/repos/{owner}/{name}/documents/{path+}",
            "sync-api",
        ),
        ("GET", "/api/repos/{owner}/{name}/readme", "sync-api"),
        ("GET", "/api/repos/{owner}/{name}/owners", "sync-api"),
        ("GET", "/api/repos/{owner}/{name}/images", "sync-api"),
        ("GET", "/api/openapi.json", "sync-api"),
        ("GET", "/api/health", "sync-api"),
        ("POST", "/api/agent-sessions/sync", "ingest"),
        ("GET", "/api/agent-sessions/hello", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/state", "ingest"),
        ("POST", "/api/agent-sessions/transcripts/intent", "ingest"),
        (
            "PUT",
            "/api/agent-sessions/transcripts/uploads/{uploadId}",
            "ingest",
        ),
        ("POST", "/api/agent-sessions/transcripts/complete", "ingest"),
        ("GET", "/api/agent-sessions/transcripts", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/segment", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/lines", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/retention", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/export", "ingest"),
        ("GET", "/api/agent-sessions/sessions/export", "ingest"),
        ("GET", "/api/agent-sessions/transcripts/search", "ingest"),
        ("GET", "/api/whoami", "sync-api"),
        ("GET", "/", "sync-api"),
        ("GET", "/console/app.js", "sync-api"),
        ("GET", "/console/app.css", "sync-api"),
        ("GET", "/api/agent-sessions/sessions", "ingest"),
        ("GET", "/api/agent-sessions/insights", "ingest"),
    ];
    let mut routes = Vec::new();
    for (_, r) in functions(&t) {
        let bin = r["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap();
        let Some(events) = r["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for e in events.values().filter(|e| e["Type"] == "HttpApi") {
            let p = &e["Properties"];
            routes.push((
                p["Method"].as_str().unwrap().to_owned(),
                p["Path"].as_str().unwrap().to_owned(),
                bin.to_owned(),
            ));
        }
    }
    routes.sort();
    let mut want: Vec<_> = expected
        .iter()
        .map(|(m, p, b)| (m.to_string(), p.to_string(), b.to_string()))
        .collect();
    want.sort();
    assert_eq!(routes, want);
}

#[test]
fn tick_runs_every_minute() {
    let t = template();
    let (_, tick) = function_of(&t, "tick");
    let schedules: Vec<&Value> = tick["Properties"]["Events"]
        .as_mapping()
        .unwrap()
        .values()
        .filter(|e| e["Type"] == "Schedule" || e["Type"] == "ScheduleV2")
        .collect();
    assert_eq!(schedules.len(), 1);
    let expr = &schedules[0]["Properties"]["Schedule"];
    let expr = if expr.is_null() {
        &schedules[0]["Properties"]["ScheduleExpression"]
    } else {
        expr
    };
    assert_eq!(expr, "rate(1 minute)");
    // A failed tick is not invoked again by Lambda's async retries: the next minute's comes.
    assert_eq!(
        tick["Properties"]["EventInvokeConfig"]["MaximumRetryAttempts"].as_i64(),
        Some(0)
    );
}

#[test]
fn the_worker_concurrency_is_capped_by_the_connection_budget_parameter() {
    let t = template();
    let (_, worker) = function_of(&t, "worker");
    let reserved = intrinsic(&worker["Properties"]["ReservedConcurrentExecutions"], "Ref")
        .and_then(Value::as_str)
        .expect("reserved concurrency is a parameter");
    let param = &t["Parameters"][reserved];
    assert_eq!(param["Type"], "Number");
    assert!(
        param["Description"]
            .as_str()
            .unwrap()
            .contains("connection")
    );
    // The SQS pollers stop at the same cap instead of being throttled.
    let max = &worker_sqs_event(&t)["Properties"]["ScalingConfig"]["MaximumConcurrency"];
    assert_eq!(
        intrinsic(max, "Ref").and_then(Value::as_str),
        Some(reserved)
    );
}

#[test]
fn deployed_functions_queue_jobs_and_keep_secrets_out_of_the_console() {
    let t = template();
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    assert_eq!(env["JOBS_BACKEND"], "sqs");
    let queue = intrinsic(&env["SQS_QUEUE_URL"], "Ref")
        .and_then(Value::as_str)
        .unwrap();
    assert_eq!(resource(&t, queue)["Type"], "AWS::SQS::Queue");
    assert_eq!(
        t["Parameters"]["DatabaseUrl"]["NoEcho"], true,
        "the URL stays out of the console too"
    );
    // Secrets come by reference (resolved at cold start), never as plain values.
    for var in [
        "DATABASE_PASSWORD",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "SYNC_API_TOKEN",
    ] {
        assert!(env[var].is_null(), "{var} must not be a plain variable");
        let param = intrinsic(&env[format!("{var}_SECRET_ARN").as_str()], "Ref")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{var}_SECRET_ARN is a parameter"));
        assert!(
            t["Parameters"][param]["AllowedPattern"]
                .as_str()
                .unwrap()
                .contains("secretsmanager"),
            "{param} takes a Secrets Manager ARN"
        );
    }
    let vpc = &t["Globals"]["Function"]["VpcConfig"];
    assert!(intrinsic(&vpc["SubnetIds"], "Ref").is_some());
    assert!(intrinsic(&vpc["SecurityGroupIds"], "Ref").is_some());
}

/// The `Ref` targets in `v`, wherever they sit (lists, `!If` branches).
pub(super) fn refs(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(name) = intrinsic(v, "Ref").and_then(Value::as_str) {
        out.push(name.to_owned());
    }
    match v {
        Value::Sequence(items) => items.iter().for_each(|i| out.extend(refs(i))),
        Value::Tagged(t) => out.extend(refs(&t.value)),
        Value::Mapping(m) => m.values().for_each(|i| out.extend(refs(i))),
        _ => {}
    }
    out
}

#[test]
fn iam_grants_read_on_exactly_the_referenced_secrets() {
    let t = template();
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    let mut referenced: Vec<String> = env
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.as_str().unwrap().ends_with("_SECRET_ARN"))
        .flat_map(|(_, v)| refs(v))
        .filter(|r| r != "AWS::NoValue")
        .collect();
    referenced.sort();
    let policy = resource(&t, "SecretsReadPolicy");
    assert_eq!(policy["Type"], "AWS::IAM::ManagedPolicy");
    let statements = policy["Properties"]["PolicyDocument"]["Statement"]
        .as_sequence()
        .unwrap();
    let read = &statements[0];
    assert_eq!(read["Action"], "secretsmanager:GetSecretValue");
    let mut granted: Vec<String> = refs(&read["Resource"])
        .into_iter()
        .filter(|r| r != "AWS::NoValue")
        .collect();
    granted.sort();
    assert_eq!(
        granted, referenced,
        "read on exactly those secrets, no wildcard"
    );
    // kms:Decrypt only for a customer managed key, given as a parameter.
    let text = serde_yaml_ng::to_string(&statements[1]).unwrap();
    assert!(text.contains("kms:Decrypt") && text.contains("SecretsKmsKeyArn"));
    for (name, f) in functions(&t) {
        let policies = refs(&f["Properties"]["Policies"]);
        assert!(
            policies.contains(&"SecretsReadPolicy".to_owned()),
            "{name} reads its secrets at cold start"
        );
    }
}

const POOL: u64 = 5;

fn default_of(t: &Value, param: &str) -> u64 {
    t["Parameters"][param]["Default"].as_u64().unwrap()
}

/// A function's reserved concurrency: a number, or the default of the parameter it names.
fn reserved(t: &Value, f: &Value) -> u64 {
    let v = &f["Properties"]["ReservedConcurrentExecutions"];
    match intrinsic(v, "Ref").and_then(Value::as_str) {
        Some(param) => default_of(t, param),
        None => v.as_u64().expect("every function has reserved concurrency"),
    }
}

#[test]
fn every_function_draws_its_connections_from_one_budget() {
    let t = template();
    assert_eq!(shared::db::DEFAULT_POOL_SIZE as u64, POOL);
    for bin in ["webhook", "sync-api", "ingest"] {
        let (_, f) = function_of(&t, bin);
        assert_eq!(
            intrinsic(&f["Properties"]["ReservedConcurrentExecutions"], "Ref"),
            Some(&Value::from("HttpReservedConcurrency")),
            "{bin}"
        );
    }
    let total: u64 = functions(&t)
        .iter()
        .map(|(_, f)| reserved(&t, f) * POOL)
        .sum();
    // The arithmetic the parameters' descriptions and the README state.
    let stated = 5
        * (default_of(&t, "WorkerReservedConcurrency")
            + 3 * default_of(&t, "HttpReservedConcurrency")
            + 1
            + 1);
    assert_eq!(total, stated);
    assert_eq!(total, 170);
    let description = t["Parameters"]["WorkerReservedConcurrency"]["Description"]
        .as_str()
        .unwrap();
    assert!(description.contains("= 170 connections"), "{description}");
}

#[test]
fn alarms_watch_the_dead_letter_queue_and_each_functions_errors_and_throttles() {
    let t = template();
    let alarms: Vec<&Value> = t["Resources"]
        .as_mapping()
        .unwrap()
        .values()
        .filter(|r| r["Type"] == "AWS::CloudWatch::Alarm")
        .collect();
    let dimension = |a: &Value| a["Properties"]["Dimensions"][0]["Value"].clone();
    let dlq = alarms
        .iter()
        .find(|a| a["Properties"]["Namespace"] == "AWS/SQS")
        .expect("a DLQ alarm");
    assert_eq!(
        dlq["Properties"]["MetricName"],
        "ApproximateNumberOfMessagesVisible"
    );
    assert_eq!(
        intrinsic(&dimension(dlq), "GetAtt").and_then(Value::as_str),
        Some("JobsDeadLetterQueue.QueueName")
    );
    for (name, _) in functions(&t) {
        for metric in ["Errors", "Throttles"] {
            assert!(
                alarms
                    .iter()
                    .any(|a| a["Properties"]["MetricName"] == metric
                        && refs(&dimension(a)) == [name.clone()]),
                "{name} has a {metric} alarm"
            );
        }
    }
    assert_eq!(t["Parameters"]["AlarmTopicArn"]["Default"], "");
    for a in &alarms {
        let actions = &a["Properties"]["AlarmActions"];
        let branches = intrinsic(actions, "If").expect("actions only with a topic");
        assert_eq!(branches[0], "HasAlarmTopic");
        assert_eq!(refs(&branches[1]), ["AlarmTopicArn"]);
    }
}

#[test]
fn each_function_logs_to_its_own_group_with_retention() {
    let t = template();
    for (name, f) in functions(&t) {
        let group = intrinsic(&f["Properties"]["LoggingConfig"]["LogGroup"], "Ref")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{name} names its log group"));
        let g = resource(&t, group);
        assert_eq!(g["Type"], "AWS::Logs::LogGroup");
        assert_eq!(
            intrinsic(&g["Properties"]["RetentionInDays"], "Ref"),
            Some(&Value::from("LogRetentionDays"))
        );
    }
}

#[test]
fn every_deploy_runs_the_migrations_before_new_code_serves() {
    let t = template();
    let (migrate, m) = function_of(&t, "migrate");
    assert!(
        m["Properties"]["AutoPublishAlias"].is_string(),
        "a new version for every build, so the custom resource changes"
    );
    let custom = resource(&t, "SchemaMigration");
    assert_eq!(custom["Type"], "Custom::SchemaMigration");
    let props = &custom["Properties"];
    assert_eq!(
        intrinsic(&props["ServiceToken"], "GetAtt").and_then(Value::as_str),
        Some(format!("{migrate}.Arn").as_str()),
        "the token itself must never change (CloudFormation refuses that)"
    );
    assert_eq!(
        intrinsic(&props["MigrateFunctionVersion"], "Ref").and_then(Value::as_str),
        Some(format!("{migrate}.Version").as_str())
    );
    for (name, f) in functions(&t) {
        if name != migrate {
            assert_eq!(f["DependsOn"], "SchemaMigration", "{name}");
        }
    }
}

#[test]
fn a_new_database_is_migrated_too_and_a_silent_migrate_function_fails_the_deploy_within_minutes() {
    let t = template();
    let (migrate, _) = function_of(&t, "migrate");
    let props = &resource(&t, "SchemaMigration")["Properties"];
    let referenced = refs(props);

    // Every setting the migrate function reads to find its database is a property, so pointing
    // the stack at another database is an Update: the new database is migrated before new code
    // serves it (the functions depend on SchemaMigration).
    let manifest: toml::Value = toml::from_str(
        &std::fs::read_to_string(super::repo_file("functions/migrate/Cargo.toml")).unwrap(),
    )
    .unwrap();
    let reads = manifest["package"]["metadata"]["syncplane"]["env"]
        .as_array()
        .unwrap();
    let env = &t["Globals"]["Function"]["Environment"]["Variables"];
    let mut database_params = Vec::new();
    for var in reads.iter().map(|v| v.as_str().unwrap()) {
        assert!(
            var.starts_with("DATABASE_"),
            "the migrate function reads {var}"
        );
        let param = intrinsic(&env[var], "Ref")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{var} is a stack parameter"));
        assert!(
            referenced.iter().any(|r| r == param),
            "{param} ({var}) must be a SchemaMigration property, or a new database is never migrated"
        );
        database_params.push(param.to_owned());
    }
    assert_eq!(
        database_params,
        ["DatabaseUrl", "DatabasePasswordSecretArn"]
    );

    // Never a secret's value: besides the function's own attributes, only the URL (which carries
    // no password: that comes from the secret) and secret ARNs.
    for r in &referenced {
        if r.starts_with(&format!("{migrate}.")) {
            continue;
        }
        let param = &t["Parameters"][r.as_str()];
        assert!(!param.is_null(), "{r} is a stack parameter");
        if r == "DatabaseUrl" {
            let description = param["Description"].as_str().unwrap();
            assert!(
                description.contains("WITHOUT the password"),
                "{description}"
            );
            // And the template refuses one at deploy time: user@host only, never user:pw@host.
            // CloudFormation matches an AllowedPattern against the whole value.
            let full = format!("^(?:{})$", param["AllowedPattern"].as_str().unwrap());
            let re = regex_lite::Regex::new(&full).unwrap();
            let pattern = |v: &str| re.is_match(v);
            assert!(pattern("postgres://syncplane@db.internal:5432/syncplane"));
            assert!(!pattern(
                "postgres://syncplane:s3cret@db.internal:5432/syncplane"
            ));
        } else {
            assert!(
                param["AllowedPattern"]
                    .as_str()
                    .is_some_and(|p| p.contains("secretsmanager")),
                "{r} must be a secret's ARN, never its value"
            );
        }
    }

    // A migrate function that never answers fails the deploy after ServiceTimeout, not after
    // CloudFormation's default hour; long enough for one full run and one retry.
    let service_timeout = props["ServiceTimeout"]
        .as_u64()
        .expect("ServiceTimeout, in whole seconds");
    let timeout = function_prop(&t, &migrate, "Timeout").as_u64().unwrap();
    assert!(
        service_timeout > 2 * timeout && service_timeout < 3600,
        "ServiceTimeout {service_timeout}s against the function's {timeout}s"
    );
    // The function answers before its deadline with room for the answer's delivery.
    assert!(shared::schema::invoke::ANSWER_MARGIN.as_secs() * 5 < timeout);
}
