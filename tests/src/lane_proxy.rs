//! A loopback HTTP proxy that fails or stalls the requests of one lane only: every request whose
//! path starts with a given prefix (e.g. `/api/agent-sessions/transcripts`) is answered `500` or
//! held until the client gives up, every other request is forwarded to the upstream server
//! unchanged. It is what the lane-isolation test and `bench-lanes` put in front of the real
//! ingest handler.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// What the proxy does with a request under its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PathFault {
    Pass = 0,
    /// Answer `500` with the error envelope, without asking the server.
    Fail = 1,
    /// Hold the request without an answer until the client abandons it (or the fault is lifted).
    Stall = 2,
    /// Flip one byte of the next request's body on the way (bytes damaged in transit), forward
    /// it, then pass.
    CorruptOnce = 3,
    /// Answer `400` with the code given to [`LaneFaultProxy::refuse_with`], without asking the
    /// server (a refusal the client cannot provoke itself).
    Refuse = 4,
}

#[derive(Clone)]
struct Shared {
    upstream: String,
    prefix: String,
    fault: Arc<AtomicU8>,
    faulted: Arc<AtomicUsize>,
    forwarded: Arc<AtomicUsize>,
    release: Arc<Notify>,
    refusal: Arc<std::sync::Mutex<String>>,
    http: reqwest::Client,
}

/// The proxy, serving on loopback until dropped.
pub struct LaneFaultProxy {
    pub addr: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl LaneFaultProxy {
    /// A proxy in front of `upstream` whose faults apply to paths starting with `prefix`.
    pub async fn start(upstream: SocketAddr, prefix: &str) -> Self {
        let shared = Shared {
            upstream: format!("http://{upstream}"),
            prefix: prefix.to_owned(),
            fault: Arc::new(AtomicU8::new(PathFault::Pass as u8)),
            faulted: Arc::new(AtomicUsize::new(0)),
            forwarded: Arc::new(AtomicUsize::new(0)),
            release: Arc::new(Notify::new()),
            refusal: Arc::new(std::sync::Mutex::new(String::new())),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("proxy client"),
        };
        let app = Router::new().fallback(serve).with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The fault for requests under the prefix from now on; lifting a stall releases the held
    /// requests (answered `504`, long after their clients gave up).
    pub fn set(&self, fault: PathFault) {
        self.shared.fault.store(fault as u8, Ordering::SeqCst);
        if fault != PathFault::Stall {
            self.shared.release.notify_waiters();
        }
    }

    /// Refuse requests under the prefix with `400` and `code` from now on.
    pub fn refuse_with(&self, code: &str) {
        if let Ok(mut c) = self.shared.refusal.lock() {
            *c = code.to_owned();
        }
        self.set(PathFault::Refuse);
    }

    /// Requests under the prefix failed or stalled so far.
    pub fn faulted(&self) -> usize {
        self.shared.faulted.load(Ordering::SeqCst)
    }

    /// Requests forwarded to the server so far (under the prefix or not).
    pub fn forwarded(&self) -> usize {
        self.shared.forwarded.load(Ordering::SeqCst)
    }
}

impl Drop for LaneFaultProxy {
    fn drop(&mut self) {
        self.shared.release.notify_waiters();
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
    let mut body = body;
    if uri.path().starts_with(&shared.prefix) {
        match shared.fault.load(Ordering::SeqCst) {
            3 if !body.is_empty() => {
                shared.faulted.fetch_add(1, Ordering::SeqCst);
                shared.fault.store(PathFault::Pass as u8, Ordering::SeqCst);
                let mut damaged = body.to_vec();
                let at = damaged.len() / 2;
                damaged[at] ^= 0x01;
                body = Bytes::from(damaged);
            }
            4 => {
                shared.faulted.fetch_add(1, Ordering::SeqCst);
                let code = shared.refusal.lock().map(|c| c.clone()).unwrap_or_default();
                let body = serde_json::json!({"success": false,
                    "error": {"message": "refused by the proxy", "code": code}});
                return (
                    StatusCode::BAD_REQUEST,
                    [("content-type", "application/json")],
                    body.to_string(),
                )
                    .into_response();
            }
            1 => {
                shared.faulted.fetch_add(1, Ordering::SeqCst);
                let body =
                    r#"{"success":false,"error":{"message":"injected failure","code":"internal"}}"#;
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    [("content-type", "application/json")],
                    body,
                )
                    .into_response();
            }
            2 => {
                shared.faulted.fetch_add(1, Ordering::SeqCst);
                let released = shared.release.notified();
                // Lifted between the load and the registration: answer at once.
                if shared.fault.load(Ordering::SeqCst) == PathFault::Stall as u8 {
                    released.await;
                }
                return StatusCode::GATEWAY_TIMEOUT.into_response();
            }
            _ => {}
        }
    }
    shared.forwarded.fetch_add(1, Ordering::SeqCst);
    forward(&shared, method, &uri, headers, body).await
}

async fn forward(
    shared: &Shared,
    method: Method,
    uri: &Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = format!(
        "{}{}",
        shared.upstream,
        uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut req = shared.http.request(method, target).body(body);
    for (k, v) in &headers {
        if k == http::header::HOST || k == http::header::CONTENT_LENGTH {
            continue;
        }
        req = req.header(k, v);
    }
    let resp = match req.send().await {
        Ok(r) => r,
        Err(_) => return StatusCode::BAD_GATEWAY.into_response(),
    };
    let status = resp.status();
    let resp_headers = resp.headers().clone();
    let Ok(bytes) = resp.bytes().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let mut out = (status, bytes).into_response();
    for (k, v) in &resp_headers {
        if k == http::header::CONTENT_LENGTH || k == http::header::TRANSFER_ENCODING {
            continue;
        }
        out.headers_mut().insert(k.clone(), v.clone());
    }
    out
}
