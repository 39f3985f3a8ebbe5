//! The device's secret redaction over the generated corpora of
//! `syncplane_tests::redaction_corpus` at a small size (the full-size figures are
//! `bench-redact`'s): issue 20's "every planted secret of every rule absent from the archive (a
//! generated corpus with ≥ 5 variants per rule)" and "on a corpus of ordinary code, logs and prose
//! […] ≤ 0.1% of lines changed".

use syncplane_agent::redact::{Redactor, rule_ids};
use syncplane_tests::redaction_corpus::{Shape, ordinary_lines, planted, rendered, survives};

#[test]
fn every_planted_secret_of_every_rule_is_absent_and_its_placeholder_names_the_rule() {
    let redactor = Redactor::new();
    let (secrets, unknown) = planted(rule_ids(), 20, 7);
    assert!(unknown.is_empty(), "rules without a generator: {unknown:?}");
    assert_eq!(secrets.len(), rule_ids().count() * 7);
    for p in &secrets {
        assert!(survives(&p.line, &p.secret), "{}: not planted", p.rule);
        let out = redactor.redact_line(&p.line);
        assert!(
            !survives(&out.text, &p.secret),
            "{}: a planted secret survived in {}",
            p.rule,
            out.text
        );
        let placeholder = format!("[REDACTED:{}]", p.rule);
        assert!(
            out.text.contains(&placeholder),
            "{placeholder} absent: {}",
            out.text
        );
        assert!(out.hits.iter().any(|(rule, n)| *rule == p.rule && *n > 0));
    }
}

#[test]
fn at_most_one_ordinary_line_in_a_thousand_is_changed() {
    let redactor = Redactor::new();
    let lines = ordinary_lines(20, 4 << 20);
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    assert!(
        bytes >= 3 << 20 && lines.len() > 2_000,
        "{bytes} B, {} lines",
        lines.len()
    );
    let changed: Vec<Vec<(&str, usize)>> = lines
        .iter()
        .map(|l| redactor.redact_line(l))
        .filter(|out| !out.hits.is_empty())
        .map(|out| out.hits)
        .collect();
    assert!(
        changed.len() * 1_000 <= lines.len(),
        "{} of {} ordinary lines changed: {changed:?}",
        changed.len(),
        lines.len()
    );
}

/// Issue 31: "a secret survives rendering (line-number prefixes, JSON escapes, URL paths, query
/// strings, log lines, code literals, basic auth, env files, YAML, tables)". Every rule's secret
/// in every shape a tool prints it in that can hold it, two contexts each.
#[test]
fn every_secret_of_every_rule_as_tools_render_it_is_absent() {
    let redactor = Redactor::new();
    let (secrets, unknown) = rendered(rule_ids(), 31, 2);
    assert!(unknown.is_empty(), "rules without a generator: {unknown:?}");
    for shape in Shape::ALL {
        assert!(
            secrets.iter().any(|p| p.shape == shape.name()),
            "no secret rendered as {}",
            shape.name()
        );
    }
    let mut missed = Vec::new();
    for p in &secrets {
        assert!(
            survives(&p.line, &p.secret),
            "{} {}: not planted",
            p.rule,
            p.shape
        );
        let out = redactor.redact_line(&p.line);
        if survives(&out.text, &p.secret) {
            missed.push(format!("{} as {}: {}", p.rule, p.shape, out.text));
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {} rendered secrets survived:\n{}",
        missed.len(),
        secrets.len(),
        missed.join("\n")
    );
}
