//! The broker's network edge: listeners and their accept loops, each connection's reads,
//! request memory and limits, TLS handshakes and SASL exchanges ([`network`]), responses
//! written with their file regions spliced in by `sendfile` ([`transfer`]), the Prometheus
//! endpoint ([`metrics`]), and the one crossing from the async tasks into the synchronous
//! storage engine ([`bridge`]).
//!
//! It serves whatever implements [`Service`]: the broker's router answers each checked frame,
//! and the edge knows nothing of APIs, handlers or coordinators.

pub mod bridge;
pub mod metrics;
pub mod network;
pub mod reply;
pub mod transfer;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ferrolog_auth::sasl::ScramStore;
use ferrolog_auth::{listener, sasl, session, tls};
use ferrolog_protocol::frame_shape::CheckedFrame;
use ferrolog_protocol::{Unanswerable, errors, frame_shape, response};

use crate::network::limits::ConnectionLimits;
use crate::reply::Reply;
use crate::session::Session;
use crate::transfer::FetchTransfer;

pub use network::{serve, serve_listeners};

/// What the network edge serves: the broker behind it.
pub trait Service: Send + Sync + std::fmt::Debug + 'static {
    /// The edge's settings.
    fn net_config(&self) -> &NetConfig;

    /// Answers one request frame, checked against its schema, from `session`.
    fn dispatch(
        self: Arc<Self>,
        frame: CheckedFrame,
        session: Arc<Session>,
    ) -> Pin<Box<dyn Future<Output = Result<Reply, Unanswerable>> + Send>>;

    /// The SCRAM credentials a SASL exchange checks.
    fn credentials(&self) -> &ScramStore;

    /// The delegation tokens a SCRAM exchange with `tokenauth=true` checks.
    fn tokens(&self) -> &ferrolog_auth::tokens::DelegationTokens;

    /// Runs the coordinators' timers; called on the blocking pool at every tick.
    fn tick(&self);

    /// The connection of `session` has ended, however it ended (what it held may go: a
    /// share consumer's session, its acquired records). Called on the connection's task: it
    /// must not block.
    fn connection_closed(self: Arc<Self>, session: &Arc<Session>) {
        let _ = session;
    }

    /// The time, in milliseconds, the connection rates are measured by (the broker's clock).
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| {
                i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
            })
    }

    /// A connection just accepted from `ip`: how long to hold it before closing it unserved,
    /// when its address is over its connection creation quota (KIP-612); `None` to serve it.
    fn connection_throttle(&self, ip: std::net::IpAddr) -> Option<Duration> {
        let _ = ip;
        None
    }

    /// Why nothing can be served any more (every data directory offline), if so: the listeners
    /// then stop, as Kafka halts.
    fn halted(&self) -> Option<String>;

    /// The connection limits, when the service changes them at run time; `None`: the
    /// listeners hold to `net_config`'s.
    fn live_limits(&self) -> Option<Arc<network::live_limits::LiveLimits>> {
        None
    }
}

/// The network edge's settings, Kafka's broker keys where Kafka has them (the broker's
/// `BrokerConfig` documents each).
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub socket_request_max_bytes: usize,
    pub queued_max_request_bytes: Option<u64>,
    pub limits: ConnectionLimits,
    pub connections_max_idle: Option<Duration>,
    pub request_arrival_timeout: Option<Duration>,
    pub connection_setup_timeout: Option<Duration>,
    pub fetch_transfer: FetchTransfer,
    pub failed_authentication_delay: Duration,
    pub sasl_max_receive_size: usize,
    pub authentication_failures_per_second_per_ip: Option<u32>,
}
