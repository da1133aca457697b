//! The listener: connections accepted within the connection limits, each served on its own
//! task ([`connection`]), the group coordinator's timers, and the stop when every data
//! directory is offline.
//!
//! The accept loop never ends on an error. A failed `accept` (out of file descriptors, say,
//! with the pending connection still queued) is logged, at most once a second with a count,
//! and accepting resumes after a pause that doubles from 10 ms up to a second, so the loop
//! neither spins nor gives up.

mod connection;
pub mod limits;
pub mod memory;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::Context;
use crate::transfer::CopyBuffers;
use limits::AddressQuotas;
use memory::RequestMemory;

/// How often the group coordinator's timers (sessions, rebalances, offset expiry) run, and
/// how often the broker checks that a data directory is still online.
const TICK: Duration = Duration::from_millis(100);
/// The first pause after a failed `accept`, doubled after each further failure.
const FIRST_ACCEPT_BACKOFF: Duration = Duration::from_millis(10);
const MAX_ACCEPT_BACKOFF: Duration = Duration::from_secs(1);
/// The most often a repeated refusal or failure is logged.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// What every connection of one listener shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub memory: RequestMemory,
    pub copy_buffers: Arc<CopyBuffers>,
}

/// Logs a repeated event at most once per [`LOG_EVERY`], counting what it held back.
#[derive(Debug)]
struct Throttled {
    last: Option<Instant>,
    held_back: u64,
}

impl Throttled {
    fn new() -> Self {
        Self {
            last: None,
            held_back: 0,
        }
    }

    /// Whether to log now, and how many were held back since the last line.
    fn due(&mut self) -> Option<u64> {
        let now = Instant::now();
        if self.last.is_some_and(|last| now - last < LOG_EVERY) {
            self.held_back += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

/// Accepts connections on `listener` until the future is dropped, or until every data
/// directory is offline: then nothing can be served any more, and, as Kafka halts, this
/// returns an error naming the directories.
/// The group coordinator's timers run while this future runs.
pub async fn serve(listener: TcpListener, context: Arc<Context>) -> std::io::Result<()> {
    let config = &context.config;
    let shared = Arc::new(Shared {
        memory: RequestMemory::new(config.queued_max_request_bytes),
        copy_buffers: Arc::new(CopyBuffers::default()),
    });
    let slots = Arc::new(Semaphore::new(
        config.limits.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    let addresses = AddressQuotas::new(config.limits.clone());
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut slot = None;
    let mut backoff = FIRST_ACCEPT_BACKOFF;
    let mut resume_accepting: Option<tokio::time::Instant> = None;
    let (mut accept_failures, mut address_refusals) = (Throttled::new(), Throttled::new());
    loop {
        tokio::select! {
            // At max.connections, the broker stops accepting until a connection closes; new
            // connections wait in the listen backlog, as with Kafka.
            acquired = Arc::clone(&slots).acquire_owned(), if slot.is_none() => {
                slot = acquired.ok();
            }
            () = async {
                if let Some(until) = resume_accepting {
                    tokio::time::sleep_until(until).await;
                }
            }, if resume_accepting.is_some() => {
                resume_accepting = None;
            }
            accepted = listener.accept(), if slot.is_some() && resume_accepting.is_none() => {
                match accepted {
                    Ok((stream, peer)) => {
                        backoff = FIRST_ACCEPT_BACKOFF;
                        match addresses.admit(peer.ip()) {
                            Ok(address_slot) => {
                                let held = (slot.take(), address_slot);
                                spawn_connection(stream, peer, &context, &shared, held);
                            }
                            Err(limit) => {
                                drop(stream);
                                if let Some(held_back) = address_refusals.due() {
                                    tracing::info!(
                                        %peer,
                                        limit,
                                        refused_since_last_line = held_back,
                                        "refused a connection: the address has max.connections.per.ip open"
                                    );
                                }
                            }
                        }
                    }
                    Err(error) => {
                        if let Some(held_back) = accept_failures.due() {
                            tracing::error!(
                                %error,
                                failed_since_last_line = held_back,
                                pause_ms = backoff.as_millis() as u64,
                                "accepting a connection failed; accepting again after a pause"
                            );
                        }
                        crate::metrics::record_accept_failure();
                        resume_accepting = Some(tokio::time::Instant::now() + backoff);
                        backoff = (backoff * 2).min(MAX_ACCEPT_BACKOFF);
                    }
                }
            }
            _ = tick.tick() => {
                if context.manager.is_halted() {
                    let dirs: Vec<String> = context
                        .manager
                        .data_dirs()
                        .iter()
                        .map(|dir| dir.path().display().to_string())
                        .collect();
                    let message = format!(
                        "every data directory is offline ({}): the broker stops",
                        dirs.join(", ")
                    );
                    tracing::error!("{message}");
                    return Err(std::io::Error::other(message));
                }
                let context = Arc::clone(&context);
                if let Err(error) = crate::bridge::blocking(move || context.groups.tick()).await {
                    tracing::error!(%error, "the group coordinator's timers failed; they run again at the next tick");
                }
            }
        }
    }
}

/// Serves one accepted connection on its own task; it holds its slots until it closes.
fn spawn_connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    context: &Arc<Context>,
    shared: &Arc<Shared>,
    slots: (
        Option<tokio::sync::OwnedSemaphorePermit>,
        limits::AddressSlot,
    ),
) {
    let context = Arc::clone(context);
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let _slots = slots;
        let _counted = crate::metrics::OpenConnection::new();
        if let Err(error) = connection::serve_connection(stream, peer, context, shared).await {
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
