//! The real ingest handler served on loopback for the desktop agent client (issue 14), and a
//! loopback proxy that can drop connections and stall responses.
//!
//! Each HTTP request becomes the API Gateway v2 event the ingest function would receive
//! ([`crate::apigw::request`]) and is answered by `shared::ingest::handle`, the same call the
//! function's `main` makes. The server records what it acknowledged, so tests can say which
//! session chunk arrived how many times. `advertise_gzip(false)` makes it answer hello like a
//! server that predates the compression capability, `without_hello(true)` like a server older
//! than hello (404), and `refuse_gzip(true)` answers a gzip POST 415 like a server rolled back
//! to a build without gzip.

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::{IntoResponse, Response};
use lambda_http::Body;
use serde_json::Value;
use shared::ingest::{IngestError, IngestState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub status: u16,
    pub gzip: bool,
    /// The request's `Content-Type`.
    pub content_type: Option<String>,
    /// For a POST: the (sessionId, chunk index, chunk total) items of the envelope.
    pub items: Vec<(String, u64, u64)>,
    pub mode: Option<String>,
    /// The `Retry-After` seconds of a 429.
    pub retry_after: Option<u64>,
    /// For a POST: the device-local fields the envelope carried, which a client must strip
    /// (`sessions[i].tokenSeries`, `sessions[i].events[j].summary` / `.data`); empty when none.
    pub local_fields: Vec<String>,
    /// When the answer was given.
    pub at: std::time::Instant,
}

#[derive(Clone)]
struct Shared {
    ingest: IngestState,
    advertise_gzip: Arc<AtomicBool>,
    without_hello: Arc<AtomicBool>,
    refuse_gzip: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

pub struct IngestServer {
    pub addr: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl IngestServer {
    pub async fn start(ingest: IngestState) -> Self {
        let shared = Shared {
            ingest,
            advertise_gzip: Arc::new(AtomicBool::new(true)),
            without_hello: Arc::new(AtomicBool::new(false)),
            refuse_gzip: Arc::new(AtomicBool::new(false)),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let app = Router::new().fallback(serve).with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn advertise_gzip(&self, on: bool) {
        self.shared.advertise_gzip.store(on, Ordering::SeqCst);
    }

    /// Answer hello 404 `not_found`, as a deploy older than hello does.
    pub fn without_hello(&self, on: bool) {
        self.shared.without_hello.store(on, Ordering::SeqCst);
    }

    /// Answer a gzip POST 415 `unsupported_encoding`, as a build without gzip does.
    pub fn refuse_gzip(&self, on: bool) {
        self.shared.refuse_gzip.store(on, Ordering::SeqCst);
    }

    /// Hellos asked so far.
    pub fn hellos(&self) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.path == shared::ingest::handler::HELLO_PATH)
            .count()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared
            .seen
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// POSTs answered so far.
    pub fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "POST")
            .collect()
    }

    /// Times each (session, chunk index) was acknowledged.
    pub fn acked_items(&self) -> std::collections::BTreeMap<(String, u64), usize> {
        let mut out = std::collections::BTreeMap::new();
        for s in self.posts().into_iter().filter(|s| s.status == 200) {
            for (id, index, _) in s.items {
                *out.entry((id, index)).or_insert(0) += 1;
            }
        }
        out
    }
}

impl Drop for IngestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    State(shared): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let owned: Vec<(String, String)> = headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect();
    let pairs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let gzip = headers
        .get("content-encoding")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    // What an older build answers instead of the handler.
    let older = if uri.path() == shared::ingest::handler::HELLO_PATH
        && shared.without_hello.load(Ordering::SeqCst)
    {
        Some(IngestError::NotFound)
    } else if gzip && shared.refuse_gzip.load(Ordering::SeqCst) {
        Some(IngestError::UnsupportedEncoding)
    } else {
        None
    };
    let resp = match older {
        Some(e) => shared::http::error_response(&e),
        None => {
            let req = crate::apigw::request(method.as_str(), path, &pairs, Some(&body));
            shared::ingest::handle(&shared.ingest, req).await
        }
    };
    let status = resp.status();
    let mut bytes: Vec<u8> = match resp.body() {
        Body::Text(s) => s.as_bytes().to_vec(),
        Body::Binary(b) => b.clone(),
        _ => Vec::new(),
    };
    if uri.path() == shared::ingest::handler::HELLO_PATH
        && status == 200
        && !shared.advertise_gzip.load(Ordering::SeqCst)
        && let Ok(mut v) = serde_json::from_slice::<Value>(&bytes)
    {
        // A server that predates the capability: no compression in the hello-ack.
        v["data"]["capabilities"] = serde_json::json!({});
        bytes = serde_json::to_vec(&v).unwrap_or(bytes);
    }
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (items, mode, local_fields) = if method == Method::POST {
        envelope_items(&body, gzip)
    } else {
        (Vec::new(), None, Vec::new())
    };
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    if let Ok(mut seen) = shared.seen.lock() {
        seen.push(Seen {
            method: method.to_string(),
            path: uri.path().to_owned(),
            status: status.as_u16(),
            gzip,
            content_type,
            items,
            mode,
            retry_after,
            local_fields,
            at: std::time::Instant::now(),
        });
    }
    let mut out = (status, bytes).into_response();
    for (k, v) in resp.headers() {
        if k == http::header::CONTENT_LENGTH {
            continue; // the hello-ack may have been rewritten
        }
        out.headers_mut().insert(k.clone(), v.clone());
    }
    out
}

/// An envelope's (session, chunk index, chunk total) items, its mode, and the local-only fields
/// it carried.
type EnvelopeSeen = (Vec<(String, u64, u64)>, Option<String>, Vec<String>);

fn envelope_items(body: &[u8], gzip: bool) -> EnvelopeSeen {
    let mut decoded = Vec::new();
    let bytes: &[u8] = if gzip {
        if flate2::read::MultiGzDecoder::new(body)
            .read_to_end(&mut decoded)
            .is_err()
        {
            return (Vec::new(), None, Vec::new());
        }
        &decoded
    } else {
        body
    };
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return (Vec::new(), None, Vec::new());
    };
    let items = v["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|s| {
                    (
                        s["sessionId"].as_str().unwrap_or_default().to_owned(),
                        s["chunk"]["index"].as_u64().unwrap_or(0),
                        s["chunk"]["total"].as_u64().unwrap_or(1),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    (
        items,
        v["mode"].as_str().map(str::to_owned),
        local_fields(&v),
    )
}

/// The device-local fields of an envelope's sessions, by path.
fn local_fields(envelope: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for (i, s) in envelope["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if s.get("tokenSeries").is_some() {
            found.push(format!("sessions[{i}].tokenSeries"));
        }
        for (j, e) in s["events"].as_array().into_iter().flatten().enumerate() {
            for field in ["summary", "data"] {
                if e.get(field).is_some() {
                    found.push(format!("sessions[{i}].events[{j}].{field}"));
                }
            }
        }
    }
    found
}

/// What the proxy does with the next connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    Pass = 0,
    /// Read the request, then close the connection without an answer.
    Drop = 1,
    /// Read the request and never answer.
    Stall = 2,
}

/// A TCP proxy on loopback in front of an HTTP server.
pub struct FaultProxy {
    pub addr: SocketAddr,
    fault: Arc<AtomicU8>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let fault = Arc::new(AtomicU8::new(Fault::Pass as u8));
        let f = fault.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(handle(client, upstream, f.clone()));
            }
        });
        Self { addr, fault, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set(&self, fault: Fault) {
        self.fault.store(fault as u8, Ordering::SeqCst);
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Each read of the client decides by the fault in force at that moment, so a kept-alive
/// connection obeys a fault set after it was opened.
async fn handle(mut client: TcpStream, upstream: SocketAddr, fault: Arc<AtomicU8>) {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut cr, mut cw) = client.split();
    let (mut sr, mut sw) = server.split();
    let mut up = [0u8; 16 * 1024];
    let mut down = [0u8; 16 * 1024];
    loop {
        tokio::select! {
            n = cr.read(&mut up) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                match fault.load(Ordering::SeqCst) {
                    1 => return,
                    2 => { std::future::pending::<()>().await; }
                    _ => if sw.write_all(&up[..n]).await.is_err() { return },
                }
            }
            n = sr.read(&mut down) => {
                let Ok(n) = n else { return };
                if n == 0 { return; }
                if cw.write_all(&down[..n]).await.is_err() { return; }
            }
        }
    }
}
