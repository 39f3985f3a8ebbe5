//! template.yaml's transcript bucket (docs/design.md "Transcripts"): what a deploy would accept
//! and still get wrong - a bucket readable over plain HTTP or by the public, a notification no
//! worker receives, roles reaching past `transcripts/` (and, for the ingest function's exports,
//! `exports/`).

use serde_yaml_ng::Value;
use shared::worker::s3_events::{COMPLETE_FAILURES, PREFIX};

use super::template::{function_of, intrinsic, refs, resource, template};

const BUCKET: &str = "TranscriptBucket";

fn bucket(t: &Value) -> &Value {
    let b = resource(t, BUCKET);
    assert_eq!(b["Type"], "AWS::S3::Bucket");
    assert_eq!(
        b["Condition"], "HasTranscriptBucket",
        "the parameter turns it off"
    );
    b
}

/// The statements of every inline policy a function's `Policies` holds (through `!If`).
fn inline_statements(f: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for p in f["Properties"]["Policies"].as_sequence().unwrap() {
        let p = match intrinsic(p, "If") {
            Some(branches) => {
                assert_eq!(branches[0], "HasTranscriptBucket");
                assert_eq!(refs(&branches[2]), ["AWS::NoValue"]);
                &branches[1]
            }
            None => p,
        };
        if let Some(statements) = p["Statement"].as_sequence() {
            out.extend(statements.iter().cloned());
        }
    }
    out
}

fn actions(statement: &Value) -> Vec<String> {
    let mut a: Vec<String> = match &statement["Action"] {
        Value::Sequence(items) => items
            .iter()
            .map(|i| i.as_str().unwrap().to_owned())
            .collect(),
        v => vec![v.as_str().unwrap().to_owned()],
    };
    a.sort();
    a
}

/// Where the ingest function writes exports (`shared::ingest::export::deliver`).
const EXPORTS: &str = "exports/";

/// The S3 object actions of function `bin` on objects under `prefix`, after checking every
/// statement reaches `transcripts/*` or `exports/*` only.
fn object_actions(t: &Value, bin: &str, prefix: &str) -> Vec<String> {
    let (_, f) = function_of(t, bin);
    let mut object = Vec::new();
    for s in inline_statements(f) {
        let acts = actions(&s);
        if !acts.iter().any(|a| a.starts_with("s3:")) {
            continue;
        }
        assert_eq!(s["Effect"], "Allow");
        if acts == ["s3:ListBucket"] {
            // Bucket-level: S3 then answers a missing object 404, not 403.
            assert_eq!(
                intrinsic(&s["Resource"], "GetAtt").and_then(Value::as_str),
                Some("TranscriptBucket.Arn"),
                "{bin}"
            );
            continue;
        }
        let resource = intrinsic(&s["Resource"], "Sub").and_then(Value::as_str);
        let under = |p: &str| resource == Some(format!("${{{BUCKET}.Arn}}/{p}*").as_str());
        assert!(
            under(PREFIX) || under(EXPORTS),
            "{bin}: objects under {PREFIX} or {EXPORTS} only: {resource:?}"
        );
        if under(prefix) {
            object.extend(acts);
        }
    }
    object.sort();
    object
}

#[test]
fn the_transcript_bucket_is_encrypted_private_and_reached_over_tls_only() {
    let t = template();
    let props = &bucket(&t)["Properties"];
    let sse = &props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0];
    let algorithm = sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"]
        .as_str()
        .unwrap();
    assert!(["AES256", "aws:kms"].contains(&algorithm), "{algorithm}");
    let block = &props["PublicAccessBlockConfiguration"];
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(block[setting], true, "{setting}");
    }
    assert_eq!(
        props["OwnershipControls"]["Rules"][0]["ObjectOwnership"], "BucketOwnerEnforced",
        "no ACLs at all"
    );
    // Transcripts outlive the stack (and a bucket with objects cannot be deleted anyway).
    assert_eq!(bucket(&t)["DeletionPolicy"], "Retain");

    let policy = resource(&t, "TranscriptBucketPolicy");
    assert_eq!(policy["Type"], "AWS::S3::BucketPolicy");
    assert_eq!(refs(&policy["Properties"]["Bucket"]), [BUCKET]);
    let statements = policy["Properties"]["PolicyDocument"]["Statement"]
        .as_sequence()
        .unwrap();
    let tls = statements
        .iter()
        .find(|s| s["Effect"] == "Deny")
        .expect("a Deny statement");
    assert_eq!(tls["Principal"], "*");
    assert_eq!(tls["Action"], "s3:*");
    assert_eq!(tls["Condition"]["Bool"]["aws:SecureTransport"], "false");
    let resources = tls["Resource"].as_sequence().unwrap();
    assert_eq!(
        intrinsic(&resources[0], "GetAtt").and_then(Value::as_str),
        Some("TranscriptBucket.Arn")
    );
    assert_eq!(
        intrinsic(&resources[1], "Sub").and_then(Value::as_str),
        Some("${TranscriptBucket.Arn}/*"),
        "the bucket and every object"
    );
    assert!(
        !statements.iter().any(|s| s["Effect"] == "Allow"),
        "the bucket policy grants nothing: the roles do"
    );
}

#[test]
fn stray_multipart_uploads_are_aborted_exports_expire_after_a_day_and_no_rule_expires_segments() {
    let t = template();
    let rules = bucket(&t)["Properties"]["LifecycleConfiguration"]["Rules"]
        .as_sequence()
        .unwrap();
    let abort = rules
        .iter()
        .find(|r| !r["AbortIncompleteMultipartUpload"].is_null())
        .expect("an abort rule");
    assert_eq!(abort["Status"], "Enabled");
    assert_eq!(
        abort["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"],
        1
    );
    // Retention is per org (orgs.transcript_retention_days): no bucket-wide expiry of segments;
    // exports (read through links valid for minutes) go after a day.
    for r in rules {
        if r["Prefix"] == EXPORTS {
            assert_eq!(
                (&r["Status"], &r["ExpirationInDays"]),
                (&"Enabled".into(), &1.into())
            );
            continue;
        }
        assert!(r["ExpirationInDays"].is_null() && r["ExpirationDate"].is_null());
    }
    assert!(
        rules.iter().any(|r| r["Prefix"] == EXPORTS),
        "an expiry rule for exports"
    );
}

#[test]
fn objects_created_under_transcripts_notify_the_queue_the_worker_polls() {
    let t = template();
    let b = bucket(&t);
    let queues = b["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
        .as_sequence()
        .unwrap();
    assert_eq!(queues.len(), 1);
    let n = &queues[0];
    assert_eq!(n["Event"], "s3:ObjectCreated:*");
    let rules = n["Filter"]["S3Key"]["Rules"].as_sequence().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["Name"], "prefix");
    assert_eq!(
        rules[0]["Value"], PREFIX,
        "the worker's prefix (s3_events::PREFIX)"
    );

    let (_, worker) = function_of(&t, "worker");
    let polled = worker["Properties"]["Events"]
        .as_mapping()
        .unwrap()
        .values()
        .find(|e| e["Type"] == "SQS")
        .map(|e| e["Properties"]["Queue"].clone())
        .unwrap();
    assert_eq!(n["Queue"], polled, "the worker's own event source");
    let queue = intrinsic(&polled, "GetAtt")
        .and_then(Value::as_str)
        .and_then(|q| q.strip_suffix(".Arn"))
        .unwrap();

    // S3 may send to that queue, from this bucket of this account only; the bucket is created
    // after the policy (S3 checks it when the notification is set).
    let policy = resource(&t, "TranscriptNotificationQueuePolicy");
    assert_eq!(policy["Type"], "AWS::SQS::QueuePolicy");
    assert_eq!(b["DependsOn"], "TranscriptNotificationQueuePolicy");
    assert_eq!(refs(&policy["Properties"]["Queues"]), [queue]);
    let s = &policy["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(s["Effect"], "Allow");
    assert_eq!(s["Principal"]["Service"], "s3.amazonaws.com");
    assert_eq!(s["Action"], "sqs:SendMessage");
    assert_eq!(
        refs(&s["Condition"]["StringEquals"]["aws:SourceAccount"]),
        ["AWS::AccountId"]
    );
    // The source ARN names the bucket by the same name expression the bucket is given:
    // syncplane-transcripts-<account>-<the stack id's last group>.
    let name = intrinsic(&b["Properties"]["BucketName"], "Join").unwrap();
    assert_eq!(name[0], "-");
    let name = name[1].as_sequence().unwrap();
    assert_eq!(refs(&name[1]), ["AWS::AccountId"]);
    let arn = intrinsic(&s["Condition"]["ArnEquals"]["aws:SourceArn"], "Join").unwrap();
    assert_eq!(arn[0], "");
    let arn = arn[1].as_sequence().unwrap();
    let prefix = format!(
        "arn:${{AWS::Partition}}:s3:::{}-${{AWS::AccountId}}-",
        name[0].as_str().unwrap()
    );
    assert_eq!(
        intrinsic(&arn[0], "Sub").and_then(Value::as_str),
        Some(prefix.as_str())
    );
    assert_eq!(arn[1], name[2], "the same stack-id suffix");
    assert_eq!(refs(&name[2]), ["AWS::StackId"]);
}

#[test]
fn ingest_and_the_worker_reach_objects_under_transcripts_only_and_ingest_its_exports() {
    let t = template();
    assert_eq!(
        object_actions(&t, "ingest", PREFIX),
        ["s3:DeleteObject", "s3:GetObject", "s3:PutObject"]
    );
    assert_eq!(
        object_actions(&t, "ingest", EXPORTS),
        ["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"],
        "an export is written by multipart upload and read through a presigned GET"
    );
    assert_eq!(
        object_actions(&t, "worker", PREFIX),
        ["s3:DeleteObject", "s3:GetObject"]
    );
    assert!(object_actions(&t, "worker", EXPORTS).is_empty());
    for bin in ["webhook", "sync-api", "tick", "migrate"] {
        for prefix in [PREFIX, EXPORTS] {
            assert!(object_actions(&t, bin, prefix).is_empty(), "{bin}");
        }
    }
    // TRANSCRIPT_BUCKET on exactly those two and the tick (which queues `transcripts.expire`
    // hourly with it, and touches no object), only with the bucket.
    assert!(t["Globals"]["Function"]["Environment"]["Variables"]["TRANSCRIPT_BUCKET"].is_null());
    for bin in ["webhook", "sync-api", "migrate"] {
        let (_, f) = function_of(&t, bin);
        let v = &f["Properties"]["Environment"]["Variables"]["TRANSCRIPT_BUCKET"];
        assert!(v.is_null(), "{bin}");
    }
    for bin in ["ingest", "worker", "tick"] {
        let (_, f) = function_of(&t, bin);
        let v = &f["Properties"]["Environment"]["Variables"]["TRANSCRIPT_BUCKET"];
        let branches = intrinsic(v, "If").expect("TRANSCRIPT_BUCKET only with the bucket");
        assert_eq!(branches[0], "HasTranscriptBucket");
        assert_eq!(refs(&branches[1]), [BUCKET], "{bin}");
    }
}

#[test]
fn a_failed_complete_raises_an_alarm() {
    let t = template();
    let filter = resource(&t, "TranscriptCompleteFailuresMetric");
    assert_eq!(filter["Type"], "AWS::Logs::MetricFilter");
    let (worker, _) = function_of(&t, "worker");
    let (_, w) = function_of(&t, "worker");
    let group = intrinsic(&w["Properties"]["LoggingConfig"]["LogGroup"], "Ref").unwrap();
    assert_eq!(
        intrinsic(&filter["Properties"]["LogGroupName"], "Ref"),
        Some(group),
        "{worker}'s log group"
    );
    let pattern = filter["Properties"]["FilterPattern"].as_str().unwrap();
    assert_eq!(pattern, format!("{{ $.{COMPLETE_FAILURES} > 0 }}"));
    let m = &filter["Properties"]["MetricTransformations"][0];
    assert_eq!(m["MetricValue"], format!("$.{COMPLETE_FAILURES}").as_str());

    let alarm = resource(&t, "TranscriptCompleteFailuresAlarm");
    assert_eq!(alarm["Type"], "AWS::CloudWatch::Alarm");
    let p = &alarm["Properties"];
    assert_eq!(p["MetricName"], m["MetricName"]);
    assert_eq!(p["Namespace"], m["MetricNamespace"]);
    assert_eq!(p["Statistic"], "Sum");
    assert_eq!(p["Threshold"].as_f64(), Some(0.0));
    assert_eq!(p["ComparisonOperator"], "GreaterThanThreshold");
}
