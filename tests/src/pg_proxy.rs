//! A TCP proxy in front of the test Postgres that can lose the reply to a COMMIT: the COMMIT
//! reaches the server and is carried out, then the connection is cut before its reply reaches
//! the client (issue 12 §5: "when a COMMIT's reply is lost"). Everything else passes through.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A simple-protocol `Query` message carrying exactly `COMMIT` (how sqlx commits).
const COMMIT_QUERY: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";

pub struct PgProxy {
    addr: SocketAddr,
    armed: Arc<AtomicBool>,
    lost: Arc<AtomicUsize>,
    accept: tokio::task::JoinHandle<()>,
}

impl PgProxy {
    /// Listen on a free loopback port, forwarding to the Postgres of `database_url`.
    pub async fn start(database_url: &str) -> Self {
        let url = url::Url::parse(database_url).expect("database URL");
        let host = url.host_str().unwrap_or("127.0.0.1").to_owned();
        let port = url.port().unwrap_or(5432);
        let upstream = tokio::net::lookup_host((host.as_str(), port))
            .await
            .expect("resolve Postgres")
            .next()
            .expect("a Postgres address");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let armed = Arc::new(AtomicBool::new(false));
        let lost = Arc::new(AtomicUsize::new(0));
        let (a, l) = (armed.clone(), lost.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    continue;
                };
                tokio::spawn(relay(client, server, a.clone(), l.clone()));
            }
        });
        Self {
            addr,
            armed,
            lost,
            accept,
        }
    }

    /// `database_url` pointed at the proxy (TLS off, so the proxy can read the messages).
    pub fn url(&self, database_url: &str) -> String {
        let mut url = url::Url::parse(database_url).expect("database URL");
        url.set_ip_host(self.addr.ip()).expect("loopback host");
        url.set_port(Some(self.addr.port())).expect("proxy port");
        url.query_pairs_mut().append_pair("sslmode", "disable");
        url.into()
    }

    /// Lose the reply to the next COMMIT any connection sends.
    pub fn lose_next_commit_reply(&self) {
        self.armed.store(true, Ordering::SeqCst);
    }

    /// How many COMMIT replies were lost so far.
    pub fn commit_replies_lost(&self) -> usize {
        self.lost.load(Ordering::SeqCst)
    }
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Copy both ways; once an armed COMMIT went through, swallow the server's reply and close both
/// sides (the server has committed when its reply arrives).
async fn relay(
    mut client: TcpStream,
    mut server: TcpStream,
    armed: Arc<AtomicBool>,
    lost: Arc<AtomicUsize>,
) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let mut from_client = vec![0u8; 64 * 1024];
    let mut from_server = vec![0u8; 64 * 1024];
    let mut cutting = false;
    loop {
        tokio::select! {
            n = client.read(&mut from_client) => {
                let Ok(n @ 1..) = n else { return };
                let chunk = &from_client[..n];
                if contains(chunk, COMMIT_QUERY)
                    && armed.compare_exchange(true, false, Ordering::SeqCst, Ordering::SeqCst).is_ok()
                {
                    cutting = true;
                }
                if server.write_all(chunk).await.is_err() {
                    return;
                }
            }
            n = server.read(&mut from_server) => {
                let Ok(n @ 1..) = n else { return };
                if cutting {
                    lost.fetch_add(1, Ordering::SeqCst);
                    return; // both sockets close here: the client never sees the reply
                }
                if client.write_all(&from_server[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
