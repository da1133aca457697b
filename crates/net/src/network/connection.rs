//! One client connection: size-prefixed requests are read in turn, each dispatched and its
//! response written before the next is read (Kafka's order), with one exception: a Produce
//! whose appends wait for their flush (`flush.messages`) lets the next Produce requests be read
//! and appended meanwhile, up to [`MAX_IN_FLIGHT`] responses held back, so that one fsync can
//! acknowledge several (group commit). Responses are written in the order of their requests.
//!
//! What a connection may hold is bounded: a request is charged against the broker's request
//! memory (its frame, as [`super::memory`] says when, then what decoding will make of it), and
//! holds that charge until its response is written; a connection that sends nothing, or reads
//! nothing of its response, for `connections.max.idle.ms` is closed, and so is one whose
//! request has not all arrived within `ferrolog.request.arrival.timeout.ms` of its size
//! ([`super::inbound`]); its read buffer shrinks back after a large request; the buffer that
//! copies fetched bytes is lent from a shared pool only while a response is written.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Shared;
use super::inbound::{Arrival, Inbound, Setup};
use super::memory::{Charge, Sender};
use super::transport::Transport;
use crate::Service;
use crate::frame_shape::{self, CheckedFrame};
use crate::listener::Listener;
use crate::reply::{PendingReply, Reply};
use crate::response::ResponseFrame;
use crate::session::Session;
use crate::transfer::FrameWriter;
use ferrolog_protocol::Unanswerable;

/// Produce responses held back for their flushes at most, per connection, while the next
/// requests are read. The Java producer sends at most 5 requests before an answer, librdkafka
/// without idempotence many more; each holds its request's memory charge until answered.
const MAX_IN_FLIGHT: usize = 16;
/// Frames from this size on are checked against their schema on the blocking pool: checking
/// one that names millions of elements takes long enough to hold up the other connections the
/// same thread serves.
const SCANNED_OFF_THREAD_BYTES: usize = 1 << 20;

/// Reads and answers requests until the client closes, goes idle, or sends what this broker
/// will not take.
pub(super) async fn serve_connection(
    socket: TcpStream,
    peer: SocketAddr,
    listener: Arc<Listener>,
    service: Arc<dyn Service>,
    shared: Arc<Shared>,
) -> io::Result<()> {
    socket.set_nodelay(true)?;
    let setup = Setup::start(service.net_config().connection_setup_timeout);
    let Some(SetUp {
        mut stream,
        mut inbound,
        writer,
        session,
    }) = set_up(socket, peer, listener, &service, &shared, &setup).await?
    else {
        return Ok(());
    };
    // The first request of a connection that did not authenticate comes within the setup time.
    let mut first_size = None;
    if session.listener().sasl.is_none() {
        match inbound.read_first_size(&mut stream, &setup).await {
            Ok(Some(size)) => first_size = Some(size),
            Ok(None) => return Ok(()),
            Err(error) => {
                if error.kind() == io::ErrorKind::TimedOut {
                    crate::metrics::record_setup_timeout();
                }
                return Err(error);
            }
        }
    }
    let session = Arc::new(session);
    let _ended = Ended {
        service: Arc::clone(&service),
        session: Arc::clone(&session),
    };
    let mut served = Served {
        stream,
        inbound,
        writer,
        held: HeldBack::new(),
        shared,
        peer,
    };
    loop {
        // A client over its quota: nothing more is read until its throttle time is up (the
        // responses it is owed still go out), as Kafka mutes its channel (KIP-219).
        if let Some(until) = session.throttled_until() {
            let throttled = tokio::time::sleep_until(until.into());
            if served.answering_while(throttled).await?.is_none() {
                return Ok(());
            }
        }
        let size = match served.next_size(&mut first_size, service.as_ref()).await? {
            Step::Go(size) => size,
            Step::Close => return served.close().await,
            Step::Stop => return Ok(()),
        };
        let (frame, charge) = match served.receive(size, service.as_ref()).await? {
            Step::Go(request) => request,
            Step::Close => return served.close().await,
            Step::Stop => return Ok(()),
        };
        match served.reply(&service, &session, frame, charge).await? {
            Step::Go(()) => {}
            Step::Close => return served.close().await,
            Step::Stop => return Ok(()),
        }
    }
}

/// Tells the service when the connection ends, whichever way serving it returns.
struct Ended {
    service: Arc<dyn Service>,
    session: Arc<Session>,
}

impl Drop for Ended {
    fn drop(&mut self) {
        Arc::clone(&self.service).connection_closed(&self.session);
    }
}

/// How serving a connection goes on after a step.
enum Step<T> {
    /// On, with this.
    Go(T),
    /// The connection closes once the responses the client is already owed are written.
    Close,
    /// The connection closes at once (a response could not be written, or answered).
    Stop,
}

/// A connection serving its requests: the socket, its buffers and the responses held back.
struct Served {
    stream: Transport,
    inbound: Inbound,
    writer: FrameWriter,
    held: HeldBack,
    shared: Arc<Shared>,
    peer: SocketAddr,
}

impl Served {
    /// Closes the connection once the responses the client is already owed are written.
    async fn close(&mut self) -> io::Result<()> {
        answer_all(
            &mut self.held,
            &mut self.stream,
            &mut self.writer,
            &self.shared,
            self.peer,
        )
        .await?;
        Ok(())
    }

    /// The next request's size, writing the held-back responses that complete meanwhile.
    async fn next_size(
        &mut self,
        first_size: &mut Option<i32>,
        service: &dyn Service,
    ) -> io::Result<Step<i32>> {
        let idle_limit = service.net_config().connections_max_idle;
        loop {
            let full = self.held.len() >= MAX_IN_FLIGHT;
            let event = match self.held.front_mut() {
                None if first_size.is_some() => Event::Request(first_size.take()),
                None => Event::Request(self.inbound.read_size(&mut self.stream, idle_limit).await?),
                Some((reply, _)) if full => Event::Answered(reply.await),
                // Reading a size is cancel-safe: bytes read stay in the buffer. A client is not
                // idle while it waits for answers, so no idle limit here.
                Some((reply, _)) => tokio::select! {
                    biased;
                    answered = reply => Event::Answered(answered),
                    size = self.inbound.read_size(&mut self.stream, None) => Event::Request(size?),
                },
            };
            match event {
                Event::Answered(answered) => {
                    let Some((_, charge)) = self.held.pop_front() else {
                        continue;
                    };
                    let (stream, writer) = (&mut self.stream, &mut self.writer);
                    if !answer(stream, writer, &self.shared, self.peer, answered, charge).await? {
                        return Ok(Step::Stop);
                    }
                }
                Event::Request(None) => return Ok(Step::Close),
                Event::Request(Some(size)) => return Ok(Step::Go(size)),
            }
        }
    }

    /// Reads the request of `size` bytes, charging it to the request memory (waiting for room
    /// while answering what completes), and checks it against its schema.
    async fn receive(
        &mut self,
        size: i32,
        service: &dyn Service,
    ) -> io::Result<Step<(CheckedFrame, Charge)>> {
        let (config, peer) = (service.net_config(), self.peer);
        let Ok(size) = usize::try_from(size) else {
            tracing::warn!(%peer, size, "closing a connection: negative request size");
            return Ok(Step::Close);
        };
        if size > config.socket_request_max_bytes {
            tracing::warn!(%peer, size, limit = config.socket_request_max_bytes, "closing a connection: request larger than socket.request.max.bytes");
            return Ok(Step::Close);
        }
        if let Some(too_large) = self.shared.memory.frame_too_large(size as u64) {
            tracing::warn!(%peer, size, capacity = too_large.capacity, "closing a connection: request larger than queued.max.request.bytes");
            return Ok(Step::Close);
        }
        let mut arrival = Arrival::start(config.request_arrival_timeout);
        if !self
            .inbound
            .read_own_part(&mut self.stream, size, &arrival)
            .await?
        {
            return Ok(Step::Close);
        }
        // With the pool spent, this connection reads no more until other requests are
        // answered (its own held-back ones among them).
        let waiting_since = Instant::now();
        let shared = Arc::clone(&self.shared);
        let charged = self
            .answering_while(
                shared
                    .memory
                    .charge_request(size as u64, Sender::Authenticated),
            )
            .await?;
        arrival.paused_for(waiting_since.elapsed());
        let mut charge = match charged {
            None => return Ok(Step::Stop),
            Some(Ok(charge)) => charge,
            Some(Err(too_large)) => {
                tracing::warn!(%peer, size, capacity = too_large.capacity, "closing a connection: request larger than queued.max.request.bytes");
                return Ok(Step::Close);
            }
        };
        let Some(frame) = self
            .inbound
            .read_frame(&mut self.stream, size, &arrival)
            .await?
        else {
            return Ok(Step::Close);
        };
        charge.arrived();
        let Some(frame) = checked(frame, peer).await else {
            return Ok(Step::Close);
        };
        let charged = self
            .answering_while(shared.memory.charge_work(&mut charge, frame.work_bytes()))
            .await?;
        match charged {
            None => Ok(Step::Stop),
            Some(Ok(())) => Ok(Step::Go((frame, charge))),
            Some(Err(too_large)) => {
                tracing::warn!(
                    %peer,
                    size,
                    decoded_bytes = too_large.needed,
                    capacity = too_large.capacity,
                    "closing a connection: decoding the request would take more than queued.max.request.bytes"
                );
                Ok(Step::Close)
            }
        }
    }

    /// Dispatches a request, and writes its response or holds it back for its flushes.
    async fn reply(
        &mut self,
        service: &Arc<dyn Service>,
        session: &Arc<Session>,
        frame: CheckedFrame,
        charge: Charge,
    ) -> io::Result<Step<()>> {
        let (shared, peer) = (&self.shared, self.peer);
        // Only a Produce is served while earlier responses wait for their flushes: its
        // appends follow theirs, which are already in the log. Anything else waits for every
        // earlier response to be written, as in Kafka's one-request-at-a-time order.
        if frame.api_key() != ApiKey::Produce as i16
            && !answer_all(
                &mut self.held,
                &mut self.stream,
                &mut self.writer,
                shared,
                peer,
            )
            .await?
        {
            return Ok(Step::Stop);
        }
        let reply = match Arc::clone(service)
            .dispatch(frame, Arc::clone(session))
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                tracing::warn!(%peer, error = %error, "closing a connection after a request it cannot answer");
                return Ok(Step::Close);
            }
        };
        match reply {
            Reply::Nothing => drop(charge), // acks=0 produce: no response
            Reply::Now(response) if self.held.is_empty() => {
                let (stream, writer) = (&mut self.stream, &mut self.writer);
                if !answer(stream, writer, shared, peer, Ok(response), charge).await? {
                    return Ok(Step::Stop);
                }
            }
            Reply::Now(response) => {
                let ready = Box::pin(std::future::ready(Ok(response)));
                self.held.push_back((ready, charge));
            }
            Reply::AfterFlush(pending) => self.held.push_back((pending, charge)),
        }
        Ok(Step::Go(()))
    }

    /// [`answering_while`] over this connection.
    async fn answering_while<T>(
        &mut self,
        wanted: impl Future<Output = T>,
    ) -> io::Result<Option<T>> {
        answering_while(
            wanted,
            &mut self.held,
            &mut self.stream,
            &mut self.writer,
            &self.shared,
            self.peer,
        )
        .await
    }
}

/// `frame` checked against its schema (on the blocking pool when it is large), or `None` when
/// it is malformed and the connection is to close.
async fn checked(frame: bytes::Bytes, peer: SocketAddr) -> Option<CheckedFrame> {
    let scanned = if frame.len() >= SCANNED_OFF_THREAD_BYTES {
        match crate::bridge::blocking(move || frame_shape::scan(frame)).await {
            Ok(scanned) => scanned,
            Err(failed) => {
                tracing::warn!(%peer, error = %failed, "closing a connection after a request it cannot check");
                return None;
            }
        }
    } else {
        frame_shape::scan(frame)
    };
    match scanned {
        Ok(frame) => Some(frame),
        Err(malformed) => {
            crate::metrics::record_error(&malformed.api, crate::errors::INVALID_REQUEST);
            tracing::warn!(%peer, error = %malformed, "closing a connection after a malformed request");
            None
        }
    }
}

/// A connection ready for its requests: over TLS if its listener is, authenticated if its
/// listener is SASL.
struct SetUp {
    stream: Transport,
    inbound: Inbound,
    writer: FrameWriter,
    session: Session,
}

/// The TLS handshake (its certificate gives an SSL listener's principal) and the SASL
/// authentication, whichever the listener has, within `setup`'s time; `None` when the
/// connection is to close.
async fn set_up(
    socket: TcpStream,
    peer: SocketAddr,
    listener: Arc<Listener>,
    service: &Arc<dyn Service>,
    shared: &Shared,
    setup: &Setup,
) -> io::Result<Option<SetUp>> {
    let config = service.net_config();
    let (mut stream, certificate_principal) = match &listener.tls {
        None => (Transport::Plain(socket), None),
        Some(tls) => {
            match super::tls_handshake::accept(socket, peer, &listener, tls, setup, config).await? {
                Some(accepted) => accepted,
                None => return Ok(None),
            }
        }
    };
    let mut inbound = Inbound::default();
    let mut writer = FrameWriter::new(
        config.fetch_transfer,
        config.connections_max_idle,
        Arc::clone(&shared.copy_buffers),
    );
    let session = match &listener.sasl {
        None => match certificate_principal {
            Some(principal) => Session::new(&principal, peer, listener),
            None => Session::anonymous(peer, listener),
        },
        Some(settings) => {
            let mut connection = Connection {
                stream: &mut stream,
                inbound: &mut inbound,
                writer: &mut writer,
                peer,
            };
            let settings = Arc::clone(settings);
            let exchange = super::authentication::authenticate(
                &mut connection,
                &listener,
                settings,
                service,
                shared,
            );
            let Some(authenticated) = setup.within(exchange).await else {
                crate::metrics::record_setup_timeout();
                return Err(setup.expired("not authenticated"));
            };
            match authenticated? {
                Some(session) => session,
                None => return Ok(None),
            }
        }
    };
    Ok(Some(SetUp {
        stream,
        inbound,
        writer,
        session,
    }))
}

/// Responses held back, oldest first, each with its request's memory charge.
type HeldBack = VecDeque<(PendingReply, Charge)>;

/// Writes every held-back response, in order; `false` when the connection is to be closed
/// instead.
async fn answer_all(
    held: &mut HeldBack,
    stream: &mut Transport,
    writer: &mut FrameWriter,
    shared: &Shared,
    peer: SocketAddr,
) -> io::Result<bool> {
    while let Some((reply, charge)) = held.pop_front() {
        let answered = reply.await;
        if !answer(stream, writer, shared, peer, answered, charge).await? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Waits for `wanted` (memory for the next request) while writing the held-back responses
/// that complete meanwhile: they hold memory the wait may need, so waiting without answering
/// them could wait for ever. `None` when the connection is to be closed instead.
async fn answering_while<T>(
    wanted: impl Future<Output = T>,
    held: &mut HeldBack,
    stream: &mut Transport,
    writer: &mut FrameWriter,
    shared: &Shared,
    peer: SocketAddr,
) -> io::Result<Option<T>> {
    let mut wanted = std::pin::pin!(wanted);
    loop {
        let answered = match held.front_mut() {
            None => return Ok(Some(wanted.await)),
            Some((reply, _)) => tokio::select! {
                biased;
                answered = reply => answered,
                value = &mut wanted => return Ok(Some(value)),
            },
        };
        let Some((_, charge)) = held.pop_front() else {
            continue;
        };
        if !answer(stream, writer, shared, peer, answered, charge).await? {
            return Ok(None);
        }
    }
}

/// What the connection waits for next.
enum Event {
    /// The next request's size, or `None` when the client closed.
    Request(Option<i32>),
    /// The oldest response held back.
    Answered(Result<ResponseFrame, Unanswerable>),
}

/// Writes a response and releases its request's memory; `false` when the connection is to be
/// closed instead (the request could not be answered: see [`Unanswerable`]).
async fn answer(
    stream: &mut Transport,
    writer: &mut FrameWriter,
    shared: &Shared,
    peer: SocketAddr,
    answered: Result<ResponseFrame, Unanswerable>,
    mut charge: Charge,
) -> io::Result<bool> {
    match answered {
        Ok(response) => {
            // A response held in memory beyond its request's charge (Metadata for every
            // topic) is written even when the pool cannot cover it; such responses grow with
            // the broker's state, not with what a client sends. Fetched record bytes are not
            // held: they go from the files.
            shared
                .memory
                .try_raise_work(&mut charge, response.encoded_len() as u64);
            writer.write(stream, response).await?;
            Ok(true)
        }
        Err(error) => {
            tracing::warn!(%peer, error = %error, "closing a connection after a request it cannot answer");
            Ok(false)
        }
    }
}

/// One connection's socket and buffers, lent to the authentication before requests are served.
#[derive(Debug)]
pub(super) struct Connection<'a> {
    pub stream: &'a mut Transport,
    pub inbound: &'a mut Inbound,
    pub writer: &'a mut FrameWriter,
    pub peer: SocketAddr,
}
