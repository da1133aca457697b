//! A single-node Kafka-protocol broker over ferrolog's [`LogManager`]: unmodified Kafka clients
//! produce and fetch through it. Codecs come from the `kafka-protocol` crate; each API has its
//! own handler in [`handlers`], all with one shape: a decoded request in, a response out.
//!
//! Threads: a tokio runtime accepts connections and reads frames; each connection answers its
//! requests in order. Storage calls are synchronous; they cross into the blocking pool in one
//! place, [`dispatch::dispatch`].

pub mod allocator;
pub mod dispatch;
pub mod error_codes;
pub mod errors;
pub mod group;
pub mod handlers;
pub mod metrics;
pub mod response;
pub mod transfer;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use ferrolog_storage::manager::LogManager;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use crate::group::{GroupConfig, GroupCoordinator};
use crate::transfer::{FetchTransfer, FrameWriter};

/// How the broker presents itself and what it allows.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Host and port clients are told to connect to (`advertised.listeners`).
    pub advertised_host: String,
    pub advertised_port: u16,
    /// Partitions of an automatically created topic (`num.partitions`). Default 1.
    pub num_partitions: i32,
    /// `auto.create.topics.enable`. Default true.
    pub auto_create_topics: bool,
    /// `socket.request.max.bytes`: larger requests close the connection. Default 100 MiB.
    pub socket_request_max_bytes: usize,
    /// How fetched record bytes reach the socket (`ferrolog.fetch.transfer`).
    pub fetch_transfer: FetchTransfer,
    /// The group coordinator's settings.
    pub groups: GroupConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            advertised_host: "127.0.0.1".into(),
            advertised_port: 9092,
            num_partitions: 1,
            auto_create_topics: true,
            socket_request_max_bytes: 104_857_600,
            fetch_transfer: FetchTransfer::default(),
            groups: GroupConfig::default(),
        }
    }
}

/// What every handler can use.
#[derive(Debug)]
pub struct Context {
    pub manager: Arc<LogManager>,
    pub config: BrokerConfig,
    /// Woken after every produce, so fetches waiting for data answer at once.
    pub appended: tokio::sync::Notify,
    pub groups: GroupCoordinator,
}

impl Context {
    /// Loads the consumer groups kept in the data dirs' offsets topic.
    pub fn new(
        manager: Arc<LogManager>,
        config: BrokerConfig,
    ) -> Result<Self, ferrolog_storage::StorageError> {
        let groups = GroupCoordinator::open(Arc::clone(&manager), config.groups.clone())?;
        Ok(Self {
            manager,
            config,
            appended: tokio::sync::Notify::new(),
            groups,
        })
    }
}

/// How often the group coordinator's timers (sessions, rebalances, offset expiry) run.
const GROUP_TICK: std::time::Duration = std::time::Duration::from_millis(100);

/// Accepts connections on `listener` until the future is dropped.
/// The group coordinator's timers run while this future runs.
pub async fn serve(listener: TcpListener, context: Arc<Context>) -> std::io::Result<()> {
    let mut group_timer = tokio::time::interval(GROUP_TICK);
    group_timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = accepted?;
                let context = Arc::clone(&context);
                tokio::spawn(async move {
                    if let Err(error) = handle_connection(stream, peer, context).await {
                        tracing::debug!(%peer, error = %error, "connection closed");
                    }
                });
            }
            _ = group_timer.tick() => {
                let context = Arc::clone(&context);
                let _ = tokio::task::spawn_blocking(move || context.groups.tick()).await;
            }
        }
    }
}

/// Reads size-prefixed requests and writes responses in request order. A malformed or oversized
/// request closes this connection, and only it.
async fn handle_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    context: Arc<Context>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buffer = BytesMut::with_capacity(64 * 1024);
    let mut writer = FrameWriter::new(context.config.fetch_transfer);
    loop {
        while buffer.len() < 4 {
            if stream.read_buf(&mut buffer).await? == 0 {
                return Ok(());
            }
        }
        let size = i32::from_be_bytes([buffer[0], buffer[1], buffer[2], buffer[3]]);
        let Ok(size) = usize::try_from(size) else {
            tracing::warn!(%peer, size, "closing a connection: negative request size");
            return Ok(());
        };
        if size > context.config.socket_request_max_bytes {
            tracing::warn!(%peer, size, limit = context.config.socket_request_max_bytes, "closing a connection: request larger than socket.request.max.bytes");
            return Ok(());
        }
        while buffer.len() < 4 + size {
            if stream.read_buf(&mut buffer).await? == 0 {
                return Ok(());
            }
        }
        buffer.advance(4);
        let frame = buffer.split_to(size).freeze();
        match dispatch::dispatch(&context, frame, peer).await {
            Ok(Some(response)) => writer.write(&mut stream, response).await?,
            Ok(None) => {} // acks=0 produce: no response
            Err(error) => {
                tracing::warn!(%peer, error = %error, "closing a connection after a malformed request");
                return Ok(());
            }
        }
    }
}
