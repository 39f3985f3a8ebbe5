//! `GET /api/repos/{owner}/{name}/owners?path=` (issue 11 "Code owners"): GitHub's example file,
//! synced from the repository, answers who owns a path and by which rule.

use serde_json::json;

use super::{read, synced};

/// GitHub's "About code owners" example (the rules the matcher's table tests, in file order).
const EXAMPLE: &str = "\
# This is a comment.
* @global-owner1 @global-owner2
*.js @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/* docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
";

#[tokio::test]
async fn owners_follow_githubs_rules_the_last_match_wins_and_an_ownerless_rule_unowns() {
    let (_w, st) = synced(&[(
        "acme/handbook",
        &[(".github/CODEOWNERS", EXAMPLE), ("docs/a.md", "# A\n")],
    )])
    .await;
    let cases = [
        (
            "README.md",
            json!(["@global-owner1", "@global-owner2"]),
            Some(2),
        ),
        ("web/app.js", json!(["@js-owner"]), Some(3)),
        (
            "scripts/deploy.sh",
            json!(["@doctocat", "@octocat"]),
            Some(10),
        ),
        ("deeply/nested/logs/x.log", json!(["@octocat"]), Some(11)),
        ("docs/getting-started.md", json!(["@doctocat"]), Some(9)),
        ("apps/github/index.ts", json!([]), Some(13)),
    ];
    for (path, owners, line) in cases {
        let r = read(&st, &format!("/api/repos/acme/handbook/owners?path={path}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.data()["owners"], owners, "{path}");
        assert_eq!(
            r.data()["rule"]["line"].as_u64(),
            line.map(|l| l as u64),
            "{path}"
        );
        assert_eq!(r.data()["codeownersPath"], ".github/CODEOWNERS");
    }
}

#[tokio::test]
async fn a_repository_without_codeowners_owns_nothing_and_the_path_is_required() {
    let (_w, st) = synced(&[("acme/handbook", &[("docs/a.md", "# A\n")])]).await;
    let r = read(&st, "/api/repos/acme/handbook/owners?path=docs/a.md").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["owners"], json!([]));
    assert_eq!(r.data()["rule"], json!(null));
    // Issue 21 point 14: without `path`, the error says the parameter is missing, by name.
    let r = read(&st, "/api/repos/acme/handbook/owners").await;
    assert_eq!((r.status, r.code()), (400, Some("missing_parameter")));
    assert!(r.body.to_string().contains("path"), "{}", r.body);
}
