//! The listeners: connections accepted within the connection limits, each served on its own
//! task ([`connection`]; on a SASL listener, authenticated first by [`authentication`]), the
//! group coordinator's timers, and the stop when every data directory is offline.
//!
//! The accept loop never ends on an error: see [`backoff`].

pub mod auth_throttle;
mod authentication;
pub(crate) mod backoff;
mod connection;
pub mod creation_rate;
mod inbound;
pub mod limits;
pub mod live_limits;
pub mod memory;
mod tls_handshake;
pub mod transport;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::Service;
use crate::listener::Listener;
use crate::transfer::CopyBuffers;
use backoff::{AcceptBackoff, Throttled};
use limits::AddressQuotas;
use memory::RequestMemory;

/// How often the group coordinator's timers (sessions, rebalances, offset expiry) run, and
/// how often the broker checks that a data directory is still online.
const TICK: Duration = Duration::from_millis(100);

/// What every connection of one listener shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub memory: RequestMemory,
    pub copy_buffers: Arc<CopyBuffers>,
    /// SASL exchanges per client address.
    pub auth_throttle: auth_throttle::AuthThrottle,
}

/// Serves one PLAINTEXT listener named `PLAINTEXT`, advertised at its own address (127.0.0.1
/// when it listens on every interface), as [`serve_listeners`] does.
pub async fn serve(listener: TcpListener, service: Arc<dyn Service>) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let host = if local.ip().is_unspecified() {
        "127.0.0.1".to_owned()
    } else {
        local.ip().to_string()
    };
    let plaintext = Arc::new(Listener::plaintext(host, local.port()));
    serve_listeners(vec![(listener, plaintext)], service).await
}

/// What every listener's accept loop shares: the connection limits count connections across
/// all listeners, as `max.connections` and `max.connections.per.ip` do in Kafka.
#[derive(Debug)]
struct Accepting {
    service: Arc<dyn Service>,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    addresses: Arc<AddressQuotas>,
    /// The limits in force, with the connection creation rates.
    live: Arc<live_limits::LiveLimits>,
}

/// Accepts connections on every listener until the future is dropped, or until every data
/// directory is offline: then nothing can be served any more, and, as Kafka halts, this
/// returns an error naming the directories.
/// The group coordinator's timers run while this future runs.
pub async fn serve_listeners(
    listeners: Vec<(TcpListener, Arc<Listener>)>,
    service: Arc<dyn Service>,
) -> std::io::Result<()> {
    let config = service.net_config();
    let live = service
        .live_limits()
        .unwrap_or_else(|| live_limits::LiveLimits::new(config.limits.clone(), Default::default()));
    live.expect_listeners(listeners.len());
    let accepting = Arc::new(Accepting {
        shared: Arc::new(Shared {
            memory: RequestMemory::new(config.queued_max_request_bytes),
            copy_buffers: Arc::new(CopyBuffers::default()),
            auth_throttle: auth_throttle::AuthThrottle::new(
                config.authentication_failures_per_second_per_ip,
            ),
        }),
        slots: live.broker_slots(),
        addresses: live.addresses(),
        live: Arc::clone(&live),
        service: Arc::clone(&service),
    });
    // Dropped with this future, which aborts every accept loop.
    let mut accept_loops = tokio::task::JoinSet::new();
    for (socket, listener) in listeners {
        let listener_slots = live.listener_slots(&listener.name, listener.max_connections);
        accept_loops.spawn(accept(
            socket,
            listener,
            listener_slots,
            Arc::clone(&accepting),
        ));
    }
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            Some(ended) = accept_loops.join_next() => {
                // An accept loop never ends on its own.
                return Err(std::io::Error::other(format!("a listener stopped accepting: {ended:?}")));
            }
            _ = tick.tick() => {
                if let Some(message) = service.halted() {
                    tracing::error!("{message}");
                    return Err(std::io::Error::other(message));
                }
                let service = Arc::clone(&service);
                let timers = crate::bridge::blocking(move || service.tick()).await;
                if let Err(error) = timers {
                    tracing::error!(%error, "the coordinators' timers failed; they run again at the next tick");
                }
            }
        }
    }
}

/// Accepts connections on one listener, within the connection limits, for ever: a slot of
/// the listener's own, then one of the broker's, then the address's.
async fn accept(
    socket: TcpListener,
    listener: Arc<Listener>,
    listener_slots: Arc<Semaphore>,
    accepting: Arc<Accepting>,
) {
    let (mut listener_slot, mut slot) = (None, None);
    let mut backoff = AcceptBackoff::new();
    let mut resume_accepting: Option<tokio::time::Instant> = None;
    let mut address_refusals = Throttled::new();
    loop {
        tokio::select! {
            // At its limit, a listener stops accepting until one of its connections closes;
            // at max.connections, every listener does. New connections wait in the listen
            // backlog, as with Kafka.
            acquired = Arc::clone(&listener_slots).acquire_owned(), if listener_slot.is_none() => {
                listener_slot = acquired.ok();
            }
            acquired = Arc::clone(&accepting.slots).acquire_owned(), if listener_slot.is_some() && slot.is_none() => {
                slot = acquired.ok();
            }
            () = async {
                if let Some(until) = resume_accepting {
                    tokio::time::sleep_until(until).await;
                }
            }, if resume_accepting.is_some() => {
                resume_accepting = None;
            }
            accepted = socket.accept(), if slot.is_some() && resume_accepting.is_none() => {
                match accepted {
                    Ok((stream, peer)) => {
                        backoff.succeeded();
                        // Over a connection creation rate: this listener waits before it
                        // serves the connection or accepts another, as Kafka's acceptor does.
                        let now_ms = accepting.service.now_ms();
                        let throttle = accepting.live.accept_throttle(&listener.name, now_ms);
                        if throttle > 0 {
                            crate::metrics::record_accept_throttle(&listener.name, throttle);
                            tokio::time::sleep(Duration::from_millis(throttle.unsigned_abs())).await;
                        }
                        match accepting.addresses.admit(peer.ip()) {
                            Ok(address_slot) => {
                                let held = Slots {
                                    _listener: listener_slot.take(),
                                    _broker: slot.take(),
                                    _address: address_slot,
                                };
                                spawn_connection(stream, peer, &listener, &accepting, held);
                            }
                            Err(limit) => {
                                drop(stream);
                                if let Some(held_back) = address_refusals.due() {
                                    tracing::info!(
                                        %peer,
                                        listener = %listener.name,
                                        limit,
                                        refused_since_last_line = held_back,
                                        "refused a connection: the address has max.connections.per.ip open"
                                    );
                                }
                            }
                        }
                    }
                    Err(error) => {
                        let pause = backoff.failed(&error, &listener.name);
                        resume_accepting = Some(tokio::time::Instant::now() + pause);
                    }
                }
            }
        }
    }
}

/// The places a connection holds while it lives: its listener's, the broker's, its address's.
#[derive(Debug)]
struct Slots {
    _listener: Option<tokio::sync::OwnedSemaphorePermit>,
    _broker: Option<tokio::sync::OwnedSemaphorePermit>,
    _address: limits::AddressSlot,
}

/// The most throttled connections held open at once until their close (see
/// [`spawn_connection`]): each holds a descriptor.
pub const MAX_HELD_THROTTLED: usize = 1_024;

/// Throttled connections held now.
static HELD_THROTTLED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One throttled connection's place among those held, given back when dropped.
struct HeldThrottled;

impl HeldThrottled {
    fn take() -> Option<Self> {
        use std::sync::atomic::Ordering::Relaxed;
        HELD_THROTTLED
            .fetch_update(Relaxed, Relaxed, |held| {
                (held < MAX_HELD_THROTTLED).then_some(held + 1)
            })
            .ok()
            .map(|_| Self)
    }
}

impl Drop for HeldThrottled {
    fn drop(&mut self) {
        HELD_THROTTLED.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Serves one accepted connection on its own task; it holds its slots until it closes.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    listener: &Arc<Listener>,
    accepting: &Accepting,
    slots: Slots,
) {
    let service = Arc::clone(&accepting.service);
    let shared = Arc::clone(&accepting.shared);
    let listener = Arc::clone(listener);
    // An address over its connection creation quota: closed unserved, after the throttle
    // time, as Kafka closes a throttled connection late so its client does not come straight
    // back. Meanwhile it holds no connection slot (Kafka counts it nowhere either); at most
    // MAX_HELD_THROTTLED such sockets are held at once, the others closed at once.
    if let Some(throttle) = service.connection_throttle(peer.ip()) {
        drop(slots);
        // Not served: it no longer counts toward the listener's and the broker's rates.
        accepting
            .live
            .unrecord_accept(&listener.name, service.now_ms());
        tracing::debug!(%peer, ?throttle, "closing a connection over its address's connection_creation_rate");
        if let Some(held) = HeldThrottled::take() {
            tokio::spawn(async move {
                let _held = held;
                tokio::time::sleep(throttle).await;
                drop(stream);
            });
        }
        return;
    }
    tokio::spawn(async move {
        let _slots = slots;
        let _counted = crate::metrics::OpenConnection::new();
        if let Err(error) =
            connection::serve_connection(stream, peer, listener, service, shared).await
        {
            tracing::debug!(%peer, error = %error, "connection closed");
        }
    });
}

/// Raises this process's soft limit on open files to its hard limit, as the JVM does for Kafka
/// (every segment keeps its `.log` open, every connection a socket), and returns the limit now
/// in force.
pub fn raise_file_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed to them.
    #[allow(unsafe_code)]
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 0;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                return raised.rlim_cur;
            }
        }
    }
    limit.rlim_cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_held_throttled_connections_are_held_and_places_come_back() {
        // The only test of this binary that holds throttled connections: the count is global.
        let held: Vec<HeldThrottled> = std::iter::from_fn(HeldThrottled::take)
            .take(MAX_HELD_THROTTLED + 1)
            .collect();
        assert_eq!(held.len(), MAX_HELD_THROTTLED);
        assert!(
            HeldThrottled::take().is_none(),
            "one more is closed at once"
        );
        drop(held);
        assert!(HeldThrottled::take().is_some());
    }
}
