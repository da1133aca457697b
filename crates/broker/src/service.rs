//! The broker as the network edge serves it ([`ferrolog_net::Service`]): its router answers
//! each request, its coordinators' timers run at each tick, and it stops serving when every data
//! directory is offline.

use std::pin::Pin;
use std::sync::Arc;

use ferrolog_net::reply::Reply;
use ferrolog_net::{NetConfig, Service};
use tokio::net::TcpListener;

use crate::Context;
use crate::frame_shape::CheckedFrame;
use crate::listener::Listener;
use crate::protocol::Unanswerable;
use crate::sasl::ScramStore;
use crate::session::Session;

impl Service for Context {
    fn net_config(&self) -> &NetConfig {
        &self.net
    }

    fn dispatch(
        self: Arc<Self>,
        frame: CheckedFrame,
        session: Arc<Session>,
    ) -> Pin<Box<dyn Future<Output = Result<Reply, Unanswerable>> + Send>> {
        Box::pin(async move { crate::dispatch::dispatch(&self, frame, &session).await })
    }

    fn credentials(&self) -> &ScramStore {
        &self.credentials
    }

    fn tokens(&self) -> &ferrolog_auth::tokens::DelegationTokens {
        &self.tokens
    }

    /// The share sessions the connection opened end with it, and what their members hold is
    /// released, as Kafka releases it.
    fn connection_closed(self: Arc<Self>, session: &Arc<Session>) {
        let ended = self
            .share_sessions
            .close_connection(crate::share_sessions::connection_id(session));
        if ended.is_empty() {
            return;
        }
        let context = self;
        tokio::spawn(async move {
            let _ = crate::bridge::blocking(move || {
                for ((group, member), partitions) in ended {
                    let idle = !context.share_sessions.group_has_sessions(&group);
                    let keys: Vec<_> = partitions
                        .iter()
                        .map(|(topic, partition)| {
                            ferrolog_coordinator::share_state::ShareKey::new(
                                &group, *topic, *partition,
                            )
                        })
                        .collect();
                    context
                        .shares
                        .release(context.groups.share_state(), &keys, &member, idle);
                }
            })
            .await;
        });
    }

    fn tick(&self) {
        self.groups.tick();
        let now = self.manager.clock().now_ms();
        self.shares.expire_locks(self.groups.share_state(), now);
        for partition in self.transactions.tick(&self.groups) {
            self.fetch_waiters.wake(&partition);
        }
        if let Err(error) = self.tokens.sweep(now) {
            tracing::error!(%error, "expired delegation tokens could not be removed; they are refused meanwhile");
        }
    }

    fn now_ms(&self) -> i64 {
        self.manager.clock().now_ms()
    }

    fn connection_throttle(&self, ip: std::net::IpAddr) -> Option<std::time::Duration> {
        let now = self.manager.clock().now_ms();
        let ms = self.quotas.connected(ip, now)?;
        Some(std::time::Duration::from_millis(
            u64::try_from(ms).unwrap_or(0),
        ))
    }

    fn live_limits(&self) -> Option<Arc<ferrolog_net::network::live_limits::LiveLimits>> {
        Some(Arc::clone(&self.live_limits))
    }

    fn halted(&self) -> Option<String> {
        if !self.manager.is_halted() {
            return None;
        }
        let dirs: Vec<String> = self
            .manager
            .data_dirs()
            .iter()
            .map(|dir| dir.path().display().to_string())
            .collect();
        Some(format!(
            "every data directory is offline ({}): the broker stops",
            dirs.join(", ")
        ))
    }
}

/// Serves one PLAINTEXT listener named `PLAINTEXT` (see [`ferrolog_net::serve`]).
pub async fn serve(listener: TcpListener, context: Arc<Context>) -> std::io::Result<()> {
    ferrolog_net::serve(listener, context).await
}

/// Accepts connections on every listener until the future is dropped, or until every data
/// directory is offline (see [`ferrolog_net::serve_listeners`]). The coordinators' timers run
/// while this future runs.
pub async fn serve_listeners(
    listeners: Vec<(TcpListener, Arc<Listener>)>,
    context: Arc<Context>,
) -> std::io::Result<()> {
    ferrolog_net::serve_listeners(listeners, context).await
}
