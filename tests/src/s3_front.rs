//! A faithful front for the S3 emulator: a loopback HTTP proxy that forwards every request to
//! moto, but first judges a presigned request's expiry as S3 does (issue 20, "Bad input and
//! faults": "an expired or replayed presigned URL").
//!
//! moto (5.2.1, checked) stores a presigned PUT whatever its `X-Amz-Expires` says; S3 refuses a
//! SigV4 presigned request received after `X-Amz-Date + X-Amz-Expires` with `403` and this body
//! (aws/aws-sdk-php#1333, aws/aws-sdk-js#3493; versity/versitygw#2116 makes an S3 clone return
//! the same `X-Amz-Expires`, `Expires` and `ServerTime` elements S3 does):
//!
//! ```xml
//! <Error><Code>AccessDenied</Code><Message>Request has expired</Message>
//! <X-Amz-Expires>300</X-Amz-Expires><Expires>2017-07-20T04:18:45Z</Expires>
//! <ServerTime>2017-07-20T04:18:55Z</ServerTime><RequestId>…</RequestId><HostId>…</HostId></Error>
//! ```
//!
//! S3 authenticates a request before it evaluates it, so an expired create-only PUT of a key
//! already there is this `403`, not the `412 PreconditionFailed` a valid one gets. An
//! `X-Amz-Expires` over a week, or a date or lifetime that does not parse, is S3's
//! `400 AuthorizationQueryParametersError`. Everything else (requests signed in headers, valid
//! presigned ones) goes to moto unchanged, and moto's answer comes back unchanged: moto's own
//! `412` for a replayed create-only PUT is S3's (`<Code>PreconditionFailed</Code>`).
//!
//! A test makes a URL expire for real (a short `upload_ttl` and a wait: the front's clock is the
//! one Postgres and the ingest handler use), or makes the next requests arrive late
//! ([`S3Front::arrive_late`]: a device that slept between its intent and its PUT, or a signer
//! whose clock is behind S3's), which needs no wait.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use tokio::net::TcpListener;

/// The longest lifetime S3 accepts for a SigV4 presigned URL: a week.
const MAX_EXPIRES_SECS: i64 = 604_800;

/// Headers that belong to one hop, never forwarded.
const HOP: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "expect",
    "keep-alive",
];

#[derive(Clone)]
struct Shared {
    upstream: String,
    http: reqwest::Client,
    /// The next this many presigned requests are judged as arriving this late.
    late: Arc<Mutex<(Duration, usize)>>,
    refused: Arc<AtomicUsize>,
    forwarded: Arc<AtomicUsize>,
}

/// The front, serving on loopback until dropped.
pub struct S3Front {
    pub addr: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl S3Front {
    /// A front for the S3 server at `upstream` (the emulator's endpoint).
    pub async fn start(upstream: &str) -> Self {
        let shared = Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .build()
                .expect("an HTTP client"),
            late: Arc::new(Mutex::new((Duration::ZERO, 0))),
            refused: Arc::new(AtomicUsize::new(0)),
            forwarded: Arc::new(AtomicUsize::new(0)),
        };
        let app = Router::new().fallback(front).with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// The endpoint to point an S3 client (and so its presigned URLs) at.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `n` presigned requests are judged as received `by` after they were.
    pub fn arrive_late(&self, by: Duration, n: usize) {
        *self.shared.late.lock().expect("lock") = (by, n);
    }

    /// Presigned requests refused as expired so far.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Requests forwarded to the emulator so far.
    pub fn forwarded(&self) -> usize {
        self.shared.forwarded.load(Ordering::SeqCst)
    }
}

impl Drop for S3Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A presigned request's window, from its query.
struct Window {
    expires_secs: i64,
    expires: DateTime<Utc>,
}

/// `None`: not a presigned request. `Err`: S3's `400` for its query.
fn window(uri: &Uri) -> Option<Result<Window, &'static str>> {
    let query = uri.query()?;
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let get = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    get("X-Amz-Algorithm")?;
    let date = get("X-Amz-Date")
        .and_then(|d| NaiveDateTime::parse_from_str(d, "%Y%m%dT%H%M%SZ").ok())
        .map(|d| d.and_utc());
    let secs = get("X-Amz-Expires").and_then(|s| s.parse::<i64>().ok());
    Some(match (date, secs) {
        (Some(_), Some(s)) if !(0..=MAX_EXPIRES_SECS).contains(&s) => Err(
            "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds",
        ),
        (Some(date), Some(s)) => Ok(Window {
            expires_secs: s,
            expires: date + chrono::Duration::seconds(s),
        }),
        _ => Err("X-Amz-Date and X-Amz-Expires must be given and well formed"),
    })
}

/// When this presigned request is received, counting a lateness set by the test.
fn received(s: &Shared) -> DateTime<Utc> {
    let mut late = s.late.lock().expect("lock");
    let by = if late.1 > 0 {
        late.1 -= 1;
        late.0
    } else {
        Duration::ZERO
    };
    Utc::now() + chrono::Duration::from_std(by).unwrap_or_default()
}

fn xml(status: StatusCode, inner: String) -> Response {
    let id = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>{inner}<RequestId>{}</RequestId><HostId>{id}</HostId></Error>",
        &id[..16]
    );
    (status, [("content-type", "application/xml")], body).into_response()
}

fn iso(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn front(
    State(s): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match window(&uri) {
        Some(Err(message)) => {
            return xml(
                StatusCode::BAD_REQUEST,
                format!(
                    "<Code>AuthorizationQueryParametersError</Code><Message>{message}</Message>"
                ),
            );
        }
        Some(Ok(w)) => {
            let now = received(&s);
            if now > w.expires {
                s.refused.fetch_add(1, Ordering::SeqCst);
                return xml(
                    StatusCode::FORBIDDEN,
                    format!(
                        "<Code>AccessDenied</Code><Message>Request has expired</Message><X-Amz-Expires>{}</X-Amz-Expires><Expires>{}</Expires><ServerTime>{}</ServerTime>",
                        w.expires_secs,
                        iso(w.expires),
                        iso(now)
                    ),
                );
            }
        }
        None => {}
    }
    forward(&s, method, &uri, &headers, body).await
}

async fn forward(
    s: &Shared,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let pq = uri.path_and_query().map_or("/", |x| x.as_str());
    let mut req = s.http.request(method, format!("{}{pq}", s.upstream));
    for (name, value) in headers {
        if !HOP.contains(&name.as_str()) {
            req = req.header(name, value);
        }
    }
    let Ok(resp) = req.body(body).send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    s.forwarded.fetch_add(1, Ordering::SeqCst);
    let status = resp.status();
    let mut out_headers = HeaderMap::new();
    for (name, value) in resp.headers() {
        if !HOP.contains(&name.as_str()) {
            out_headers.append(name, value.clone());
        }
    }
    let bytes = resp.bytes().await.unwrap_or_default();
    let mut out = Response::new(axum::body::Body::from(bytes));
    *out.status_mut() = status;
    *out.headers_mut() = out_headers;
    out
}
