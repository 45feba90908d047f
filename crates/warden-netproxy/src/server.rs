//! The proxy itself: one thread with its own runtime, serving listeners handed to it (each the
//! listening socket of one sandbox's network namespace). A connection is SOCKS5 if its first
//! byte says so, else HTTP: absolute-form requests are forwarded, `CONNECT` opens a tunnel.
//! Every target is decided by the policy, resolved here, checked again by address, and
//! connected to at exactly the address checked; a tunnel to TLS must ask for the server name it
//! asked the proxy for. Every connection ends in a [`Record`].

use std::sync::Arc;

use tokio::net::TcpStream;

use crate::host::Entry;
use crate::state::{Config, Counts, Shared};

/// A running proxy. Dropping it stops it, and every connection it serves.
pub struct Proxy {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("counts", &self.counts())
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// Starts the proxy's thread; it serves nothing until given a listener. A CA of its own is
    /// made when some host's rules or credentials need its TLS ended.
    pub fn start(config: Config) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::new(config)?);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("warden-netproxy".into())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
                runtime.shutdown_background();
            })?;
        Ok(Self {
            shared,
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Serves connections arriving on `listener` until the proxy is dropped.
    pub fn serve(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        listener.set_nonblocking(true)?;
        let shared = Arc::clone(&self.shared);
        let _guard = self.handle.enter();
        let listener = tokio::net::TcpListener::from_std(listener)?;
        self.handle.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let _ = serve_connection(shared, stream).await;
                });
            }
        });
        Ok(())
    }

    /// The certificate of this run's CA, when it has one: what the sandbox must trust.
    pub fn ca_pem(&self) -> Option<String> {
        self.shared.ca_pem()
    }

    /// How many connections were allowed and refused.
    pub fn counts(&self) -> Counts {
        self.shared.counts()
    }

    /// Allows `entry` for the rest of this proxy's life.
    pub fn allow(&self, entry: Entry) {
        self.shared.allow(entry);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve_connection(shared: Arc<Shared>, stream: TcpStream) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; 1];
    if stream.peek(&mut first).await? == 0 {
        return Ok(());
    }
    if first[0] == 5 {
        return crate::socks::socks_connection(shared, stream).await;
    }
    let io = hyper_util::rt::TokioIo::new(stream);
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, hyper::Error>(crate::http::http_request(shared, req).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .max_buf_size(64 * 1024)
        .serve_connection(io, service)
        .with_upgrades()
        .await;
    Ok(())
}
