//! The fake GitHub's GraphQL endpoint answers like GitHub's: a real GraphQL engine over the
//! fake's git objects with GitHub's names, `NOT_FOUND` entries with `null` in `data`, the
//! 100-ids limit, its own points budget with `RATE_LIMITED` answers, and faults on demand. The
//! error shapes pinned here are GitHub's as observed (e.g. sourcecred/sourcecred#908 for
//! `ARGUMENT_LIMIT`, yanyongyu/githubkit#271 for `RATE_LIMIT`). Plain reqwest, so the fake is
//! checked independently of the client.

use std::time::Duration;

use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};
use syncplane_tests::fake_github::{Change, Endpoint, FakeGithub, Fault, GraphqlFault};

use crate::fake_github::setup;

const HEADS: &str = "query($ids: [ID!]!) {
  rateLimit { cost remaining resetAt limit used }
  nodes(ids: $ids) {
    __typename id
    ... on Repository {
      databaseId nameWithOwner
      defaultBranchRef { name target { __typename oid ... on Commit { tree { oid } } } }
    }
  }
}";

async fn post(
    github: &FakeGithub,
    token: &str,
    path: &str,
    query: &str,
    variables: Value,
) -> Response {
    Client::new()
        .post(format!("{}{path}", github.url()))
        .header("authorization", format!("bearer {token}"))
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await
        .unwrap()
}

async fn query(
    github: &FakeGithub,
    token: &str,
    query: &str,
    variables: Value,
) -> (StatusCode, Value) {
    let response = post(github, token, "/graphql", query, variables).await;
    let status = response.status();
    (status, response.json().await.unwrap())
}

fn files(pairs: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static [u8])> {
    pairs.iter().map(|(p, c)| (*p, c.as_bytes())).collect()
}

#[tokio::test]
async fn nodes_resolves_repositories_with_githubs_names_and_real_git_ids() {
    let (github, installation, token) = setup().await;
    let id = github.add_repo(installation, "acme/docs", &files(&[("docs/a.md", "# A\n")]));
    let (status, body) = query(
        &github,
        &token,
        HEADS,
        json!({"ids": [github.node_id("acme/docs")]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.get("errors").is_none(), "{body}");
    let node = &body["data"]["nodes"][0];
    assert_eq!(node["__typename"], "Repository");
    assert_eq!(node["id"], github.node_id("acme/docs"));
    assert_eq!(node["databaseId"], json!(id));
    assert_eq!(node["nameWithOwner"], "acme/docs");
    let branch = &node["defaultBranchRef"];
    assert_eq!(branch["name"], "main");
    assert_eq!(branch["target"]["__typename"], "Commit");
    assert_eq!(
        branch["target"]["oid"],
        json!(github.branch_head("acme/docs", "main").unwrap())
    );
    assert_eq!(
        branch["target"]["tree"]["oid"],
        json!(github.head_tree("acme/docs").unwrap())
    );
    let rate = &body["data"]["rateLimit"];
    assert_eq!(rate["cost"], 1);
    assert_eq!(rate["limit"], 5000);
    assert_eq!(rate["remaining"], 4999);
    assert!(rate["resetAt"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn the_docs_folder_is_reached_by_an_expression_and_the_listing_gives_node_ids() {
    let (github, installation, token) = setup().await;
    github.add_repo(
        installation,
        "acme/docs",
        &files(&[("docs/a.md", "# A\n"), ("README.md", "# R\n")]),
    );
    github.add_repo(installation, "acme/empty", &[]);
    let listing: Value = Client::new()
        .get(format!("{}/installation/repositories", github.url()))
        .header("authorization", format!("token {token}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        listing["repositories"][0]["node_id"],
        json!(github.node_id("acme/docs"))
    );
    let (_, body) = query(
        &github,
        &token,
        "query($id: ID!, $e: String!, $empty: ID!) {
           d: node(id: $id) { ... on Repository { object(expression: $e) { __typename oid } } }
           missing: node(id: $id) { ... on Repository { object(expression: \"main:nope\") { oid } } }
           empty: node(id: $empty) { ... on Repository { defaultBranchRef { name } } }
         }",
        json!({"id": github.node_id("acme/docs"), "e": "main:docs", "empty": github.node_id("acme/empty")}),
    )
    .await;
    let tree = &body["data"]["d"]["object"];
    assert_eq!(tree["__typename"], "Tree");
    assert_eq!(tree["oid"].as_str().unwrap().len(), 40);
    assert_eq!(
        body["data"]["missing"]["object"],
        Value::Null,
        "a missing path is null, not an error"
    );
    assert_eq!(
        body["data"]["empty"]["defaultBranchRef"],
        Value::Null,
        "an empty repository has no branch"
    );
    assert!(body.get("errors").is_none(), "{body}");

    // The folder's oid moves with a change inside it, not with one outside it.
    let before = tree["oid"].clone();
    github.push(
        "acme/docs",
        &[Change::Put("README.md".into(), b"# R2\n".to_vec())],
    );
    let (_, again) = query(&github, &token, "query($id: ID!) { node(id: $id) { ... on Repository { object(expression: \"main:docs\") { oid } } } }", json!({"id": github.node_id("acme/docs")})).await;
    assert_eq!(again["data"]["node"]["object"]["oid"], before);
}

#[tokio::test]
async fn an_unresolvable_id_is_null_in_data_with_a_not_found_error_naming_its_index() {
    let (github, installation, token) = setup().await;
    github.add_repo(installation, "acme/docs", &files(&[("docs/a.md", "# A\n")]));
    github.add_repo(installation, "acme/gone", &files(&[("docs/a.md", "# A\n")]));
    let gone = github.node_id("acme/gone");
    github.delete_repo("acme/gone");
    let (status, body) = query(
        &github,
        &token,
        HEADS,
        json!({"ids": [github.node_id("acme/docs"), gone]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"]["nodes"][0]["__typename"], "Repository");
    assert_eq!(body["data"]["nodes"][1], Value::Null);
    let errors = body["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["type"], "NOT_FOUND");
    assert_eq!(errors[0]["path"], json!(["nodes", 1]));
    assert_eq!(
        errors[0]["message"],
        json!(format!(
            "Could not resolve to a node with the global id of '{gone}'."
        ))
    );
    assert!(
        errors[0].get("extensions").is_none(),
        "GitHub puts type at the top"
    );
}

#[tokio::test]
async fn more_than_100_ids_is_an_argument_limit_with_no_data() {
    let (github, installation, token) = setup().await;
    github.add_repo(installation, "acme/docs", &files(&[("docs/a.md", "# A\n")]));
    let ids = vec![github.node_id("acme/docs"); 101];
    let (status, body) = query(&github, &token, HEADS, json!({"ids": ids})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["data"], Value::Null);
    assert_eq!(body["errors"][0]["type"], "ARGUMENT_LIMIT");
    assert_eq!(body["errors"][0]["path"], json!(["nodes"]));
    assert_eq!(
        body["errors"][0]["message"],
        "You may not provide more than 100 node ids; you provided 101."
    );
    let (_, ok) = query(
        &github,
        &token,
        HEADS,
        json!({"ids": vec![github.node_id("acme/docs"); 100]}),
    )
    .await;
    assert_eq!(ok["data"]["nodes"].as_array().unwrap().len(), 100);
}

#[tokio::test]
async fn points_are_their_own_budget_and_an_exhausted_one_answers_200_rate_limited() {
    let (github, installation, token) = setup().await;
    github.add_repo(installation, "acme/docs", &files(&[("docs/a.md", "# A\n")]));
    let rest_before = github.rate_limit_remaining();
    github.set_graphql_rate_limit(5000, 1, Duration::from_secs(600));
    let response = post(
        &github,
        &token,
        "/graphql",
        HEADS,
        json!({"ids": [github.node_id("acme/docs")]}),
    )
    .await;
    assert_eq!(response.headers()["x-ratelimit-resource"], "graphql");
    assert_eq!(response.headers()["x-ratelimit-remaining"], "0");
    assert_eq!(
        github.rate_limit_remaining(),
        rest_before,
        "REST's budget is untouched"
    );

    let response = post(
        &github,
        &token,
        "/graphql",
        HEADS,
        json!({"ids": [github.node_id("acme/docs")]}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let reset: i64 = response.headers()["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > chrono::Utc::now().timestamp() + 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["data"], Value::Null);
    assert_eq!(body["errors"][0]["type"], "RATE_LIMITED");
    assert!(
        body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("API rate limit exceeded for installation ID")
    );
}

#[tokio::test]
async fn faults_on_demand_answer_the_way_github_does() {
    let (github, installation, token) = setup().await;
    github.add_repo(installation, "acme/a", &files(&[("docs/a.md", "# A\n")]));
    github.add_repo(installation, "acme/b", &files(&[("docs/b.md", "# B\n")]));
    let ids = json!({"ids": [github.node_id("acme/a"), github.node_id("acme/b")]});

    github.graphql_fault(
        GraphqlFault::RateLimited {
            kind: "RATE_LIMIT",
            reset_in: Duration::from_secs(60),
        },
        Some(1),
    );
    let (status, body) = query(&github, &token, HEADS, ids.clone()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["errors"][0]["type"], "RATE_LIMIT");

    github.graphql_fault(GraphqlFault::ErrorsWithoutData, Some(1));
    let (_, body) = query(&github, &token, HEADS, ids.clone()).await;
    assert_eq!(body["data"], Value::Null);
    assert!(body["errors"][0].get("type").is_none());

    github.graphql_fault(GraphqlFault::PartialData { index: 1 }, Some(1));
    let (_, body) = query(&github, &token, HEADS, ids.clone()).await;
    assert_eq!(body["data"]["nodes"][0]["__typename"], "Repository");
    assert_eq!(body["data"]["nodes"][1], Value::Null);
    assert_eq!(body["errors"][0]["type"], "FORBIDDEN");
    assert_eq!(body["errors"][0]["path"], json!(["nodes", 1]));

    github.graphql_fault(
        GraphqlFault::ReplaceNode {
            index: 0,
            node: json!({"__typename": "Issue", "id": "I_1"}),
        },
        Some(1),
    );
    let (_, body) = query(&github, &token, HEADS, ids.clone()).await;
    assert_eq!(body["data"]["nodes"][0]["__typename"], "Issue");

    github.fault(Endpoint::Graphql, Fault::Status(502), Some(1));
    let response = post(&github, &token, "/graphql", HEADS, ids.clone()).await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);

    // Faults are used up; the Enterprise path serves the same engine.
    let response = post(&github, &token, "/api/graphql", HEADS, ids).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(github.count(Endpoint::Graphql), 6);
}

#[tokio::test]
async fn a_bad_token_is_refused_and_another_installations_repository_is_not_found() {
    let (github, installation, token) = setup().await;
    let other = github.add_installation("other");
    github.add_repo(installation, "acme/docs", &files(&[("docs/a.md", "# A\n")]));
    github.add_repo(other, "other/secret", &files(&[("docs/s.md", "# S\n")]));
    let response = post(
        &github,
        "ghs_not_a_token",
        "/graphql",
        HEADS,
        json!({"ids": []}),
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    let (_, body) = query(
        &github,
        &token,
        HEADS,
        json!({"ids": [github.node_id("other/secret")]}),
    )
    .await;
    assert_eq!(body["data"]["nodes"][0], Value::Null);
    assert_eq!(body["errors"][0]["type"], "NOT_FOUND");
}

// ---- Issue 23: the listing (`viewer.repositories`) and the probe (`Commit.file`) ----

/// Field name → (type, arguments name → type) of every object and interface in an SDL text.
type Fields = std::collections::BTreeMap<(String, String), (String, Vec<(String, String)>)>;

fn fields_of(sdl: &str) -> Fields {
    use async_graphql::parser::types::{TypeKind, TypeSystemDefinition};
    let document = async_graphql::parser::parse_schema(sdl).expect("SDL parses");
    let mut out = Fields::new();
    for definition in document.definitions {
        let TypeSystemDefinition::Type(t) = definition else {
            continue;
        };
        let t = t.node;
        let fields = match t.kind {
            TypeKind::Object(o) => o.fields,
            TypeKind::Interface(i) => i.fields,
            _ => continue,
        };
        for f in fields {
            let f = f.node;
            let args = f
                .arguments
                .iter()
                .map(|a| (a.node.name.node.to_string(), a.node.ty.node.to_string()))
                .collect();
            out.insert(
                (t.name.node.to_string(), f.name.node.to_string()),
                (f.ty.node.to_string(), args),
            );
        }
    }
    out
}

/// The contract: every field syncplane's queries use is declared by the fake with the type
/// GitHub publishes, and every argument the fake takes has the published type.
#[test]
fn the_fake_declares_every_field_syncplane_asks_for_as_githubs_published_schema_does() {
    let published = fields_of(include_str!(
        "../../fixtures/github/graphql-schema-excerpt.graphql"
    ));
    let fake = fields_of(&syncplane_tests::fake_github::graphql_sdl());
    assert!(published.len() >= 40, "the excerpt is read whole");
    for ((object, field), (ty, args)) in &published {
        let Some((fake_ty, fake_args)) = fake.get(&(object.clone(), field.clone())) else {
            panic!("the fake lacks {object}.{field}");
        };
        assert_eq!(fake_ty, ty, "{object}.{field}");
        for (name, arg_ty) in fake_args {
            let published_arg = args.iter().find(|(n, _)| n == name);
            assert_eq!(
                published_arg.map(|(_, t)| t),
                Some(arg_ty),
                "{object}.{field}({name}:)"
            );
        }
    }
}

const LISTING: &str = "query($after: String, $first: Int) {
  viewer { login repositories(first: $first, after: $after) {
    totalCount pageInfo { hasNextPage endCursor }
    nodes { databaseId id nameWithOwner isPrivate isArchived url owner { login } }
  } }
}";

#[tokio::test]
async fn viewer_repositories_lists_the_installations_repositories_in_pages_of_at_most_100() {
    let (github, installation, token) = setup().await;
    for i in 0..150 {
        github.add_repo(installation, &format!("acme/r{i:03}"), &[]);
    }
    let other = github.add_installation("other");
    github.add_repo(other, "other/hidden", &[]);
    let (status, first) = query(&github, &token, LISTING, json!({"first": 100})).await;
    assert_eq!(status, StatusCode::OK);
    let connection = &first["data"]["viewer"]["repositories"];
    assert_eq!(connection["totalCount"], 150, "{first}");
    assert_eq!(connection["nodes"].as_array().unwrap().len(), 100);
    assert_eq!(connection["pageInfo"]["hasNextPage"], true);
    assert_eq!(connection["nodes"][0]["owner"]["login"], "acme");
    assert_eq!(
        connection["nodes"][0]["url"],
        "https://github.com/acme/r000"
    );
    let after = connection["pageInfo"]["endCursor"].clone();
    let (_, second) = query(
        &github,
        &token,
        LISTING,
        json!({"first": 100, "after": after}),
    )
    .await;
    let connection = &second["data"]["viewer"]["repositories"];
    assert_eq!(connection["nodes"].as_array().unwrap().len(), 50);
    assert_eq!(connection["pageInfo"]["hasNextPage"], false);
    assert_eq!(connection["nodes"][49]["nameWithOwner"], "acme/r149");
}

#[tokio::test]
async fn viewer_repositories_refuses_more_than_100_or_no_bound_as_github_does() {
    let (github, _, token) = setup().await;
    let (status, over) = query(&github, &token, LISTING, json!({"first": 101})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(over["data"], Value::Null, "the whole query is refused");
    assert_eq!(over["errors"][0]["type"], "EXCESSIVE_PAGINATION");
    assert_eq!(
        over["errors"][0]["message"],
        "Requesting 101 records on the `repositories` connection exceeds the `first` limit of 100 records."
    );
    let (_, unbounded) = query(&github, &token, LISTING, json!({})).await;
    assert_eq!(unbounded["data"], Value::Null);
    assert_eq!(
        unbounded["errors"][0]["type"],
        "MISSING_PAGINATION_BOUNDARIES"
    );
}

#[tokio::test]
async fn commit_file_reads_an_exact_path_with_the_octal_mode_as_a_number() {
    let (github, installation, token) = setup().await;
    github.add_repo(
        installation,
        "acme/docs",
        &files(&[("README.md", "# R\n"), ("docs/a.md", "# A\n")]),
    );
    let q = "query($o: String!, $n: String!) { repository(owner: $o, name: $n) {
      defaultBranchRef { target { ... on Commit {
        tree { entries { name type } }
        readme: file(path: \"README.md\") { name path type mode oid }
        lower: file(path: \"readme.md\") { oid }
        nested: file(path: \"docs/a.md\") { oid }
        docs: file(path: \"docs\") { type mode }
      } } } } }";
    let (_, body) = query(&github, &token, q, json!({"o": "acme", "n": "docs"})).await;
    let commit = &body["data"]["repository"]["defaultBranchRef"]["target"];
    assert_eq!(
        commit["readme"],
        json!({"name": "README.md", "path": "README.md", "type": "blob", "mode": 33188,
            "oid": FakeGithub::blob_sha(b"# R\n")})
    );
    assert_eq!(commit["lower"], Value::Null, "paths are case-sensitive");
    assert_eq!(commit["nested"]["oid"], FakeGithub::blob_sha(b"# A\n"));
    assert_eq!(commit["docs"], json!({"type": "tree", "mode": 16384}));
    assert_eq!(
        commit["tree"]["entries"],
        json!([{"name": "README.md", "type": "blob"}, {"name": "docs", "type": "tree"}])
    );
}
