//! The direct transport through `syncplane serve` on loopback (real HTTP, the API Gateway
//! conversion, a binary body): the upload URL keeps the `/lambda-url/ingest` prefix the request
//! came through, and the whole upload works through it.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};
use syncplane_cli::serve::{Functions, router};

use super::support::*;
use crate::engine::World;
use crate::functions::support::state;

#[tokio::test]
async fn a_segment_goes_through_syncplane_serve_at_the_url_the_intent_answers() {
    let w = World::new().await;
    let env = env().await;
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = router(Arc::new(Functions::new(state(&w), env.state.clone())));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();
    let auth = format!("Bearer {}", env.token);

    let seg = segment(&lines(200, "a"));
    let resp = http
        .post(format!(
            "{base}/lambda-url/ingest/api/agent-sessions/transcripts/intent"
        ))
        .header("authorization", &auth)
        .json(&intent_for(1, 0, &seg))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let intent: Value = resp.json().await.unwrap();
    let data = &intent["data"];
    let id = data["uploadId"].as_str().unwrap();
    let url = data["upload"]["url"].as_str().unwrap();
    assert_eq!(
        url,
        format!("/lambda-url/ingest/api/agent-sessions/transcripts/uploads/{id}")
    );
    let mut put = http
        .put(format!("{base}{url}"))
        .header("authorization", &auth);
    for (k, v) in data["upload"]["headers"].as_object().unwrap() {
        put = put.header(k.as_str(), v.as_str().unwrap());
    }
    let resp = put.body(seg.compressed.clone()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let key = data["objectKey"].as_str().unwrap();
    assert_eq!(
        std::fs::read(env.dir.join(key)).unwrap(),
        seg.compressed,
        "the bytes as sent, not re-encoded on the way"
    );
    let resp = http
        .post(format!("{base}/api/agent-sessions/transcripts/complete"))
        .header("authorization", &auth)
        .json(&json!({ "uploadId": id }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let done: Value = resp.json().await.unwrap();
    assert_eq!(
        done["data"],
        json!({"generation": 1, "ackedOffset": seg.decoded.len()})
    );
}
