//! Reading requests off a connection: each is a 4-byte size and that many bytes. Bytes read and
//! not yet taken as a request wait in the connection's buffer, which shrinks back after a large
//! request.
//!
//! Once its size has arrived, a request's bytes must all arrive within
//! `ferrolog.request.arrival.timeout.ms` ([`Arrival`]): the memory charged for a request that
//! trickles in is held meanwhile (see [`super::memory`]), and a client that has not sent its
//! request by then has given up on it itself (Kafka's clients time a request out after 30
//! seconds). Time the broker spends waiting for memory to read on does not count.

use std::io;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use super::memory::OWN_BUFFER;
use super::transport::Transport;

/// Bytes read ahead from the socket when waiting for a request's size.
const READ_AHEAD: usize = 4 * 1024;

/// Why a connection closed, for the log (at debug: these are the client's doing).
pub(super) fn idle(idle: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("idle for connections.max.idle.ms ({} ms)", idle.as_millis()),
    )
}

/// What a deadline was for, to name the setting that set it.
#[derive(Debug, Clone, Copy)]
enum Limit {
    /// A request's bytes after its size.
    Arrival,
    /// A new connection's first request (after its authentication, if any).
    Setup,
}

fn timed_out(limit: Limit, duration: Duration) -> io::Error {
    let what = match limit {
        Limit::Arrival => "a request did not all arrive within ferrolog.request.arrival.timeout.ms",
        Limit::Setup => "no first request within ferrolog.connection.setup.timeout.ms",
    };
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("{what} ({} ms)", duration.as_millis()),
    )
}

/// How long a read may wait.
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// Each read, this long at most (waiting for a request to start).
    EachRead(Duration),
    /// Every read done by then.
    Until(Instant, Duration, Limit),
    Forever,
}

/// When a request's bytes must all have arrived: its size's arrival and the limit, moved on by
/// the time the broker itself kept the request waiting.
#[derive(Debug, Clone, Copy)]
pub(super) struct Arrival {
    deadline: Option<(Instant, Duration)>,
}

impl Arrival {
    /// A request whose size has just arrived, to arrive within `limit` (`None`: no limit).
    pub(super) fn start(limit: Option<Duration>) -> Self {
        Self {
            deadline: limit.map(|limit| (Instant::now() + limit, limit)),
        }
    }

    /// The broker did not read for `waited` (waiting for memory): the client gets that long
    /// more.
    pub(super) fn paused_for(&mut self, waited: Duration) {
        if let Some((deadline, _)) = &mut self.deadline {
            *deadline += waited;
        }
    }

    fn wait(&self) -> Wait {
        self.deadline.map_or(Wait::Forever, |(deadline, limit)| {
            Wait::Until(deadline, limit, Limit::Arrival)
        })
    }
}

/// When a new connection must have finished its TLS handshake and its authentication, and
/// sent its first request: `ferrolog.connection.setup.timeout.ms` after it was accepted. A
/// Kafka client sends its first request (ApiVersions) at once; a connection that sends nothing
/// would hold a connection slot until `connections.max.idle.ms`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Setup {
    deadline: Option<(Instant, Duration)>,
}

impl Setup {
    /// A connection accepted now, to be set up within `limit` (`None`: no limit).
    pub(crate) fn start(limit: Option<Duration>) -> Self {
        Self {
            deadline: limit.map(|limit| (Instant::now() + limit, limit)),
        }
    }

    /// How long is left, if there is a limit.
    pub(crate) fn left(&self) -> Option<Duration> {
        self.deadline
            .map(|(deadline, _)| deadline.saturating_duration_since(Instant::now()))
    }

    /// The error of a connection not set up in time, naming the setting.
    pub(crate) fn expired(&self, what: &str) -> io::Error {
        let limit = self.deadline.map_or(Duration::ZERO, |(_, limit)| limit);
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{what} within ferrolog.connection.setup.timeout.ms ({} ms)",
                limit.as_millis()
            ),
        )
    }

    /// Runs `step` (a handshake, an authentication) within what is left; `None` when the
    /// time ran out first.
    pub(crate) async fn within<T>(&self, step: impl Future<Output = T>) -> Option<T> {
        match self.deadline {
            None => Some(step.await),
            Some((deadline, _)) => tokio::time::timeout_at(deadline, step).await.ok(),
        }
    }
}

/// Bytes read from the socket and not yet taken as a request.
#[derive(Debug, Default)]
pub(super) struct Inbound {
    buffer: BytesMut,
}

impl Inbound {
    /// Reads until `want` bytes are buffered. `false` when the client closed first.
    async fn fill(&mut self, stream: &mut Transport, want: usize, wait: Wait) -> io::Result<bool> {
        while self.buffer.len() < want {
            self.buffer
                .reserve((want - self.buffer.len()).max(READ_AHEAD));
            let read = stream.read_buf(&mut self.buffer);
            let count = match wait {
                Wait::EachRead(limit) => tokio::time::timeout(limit, read)
                    .await
                    .map_err(|_| idle(limit))??,
                Wait::Until(deadline, duration, limit) => tokio::time::timeout_at(deadline, read)
                    .await
                    .map_err(|_| timed_out(limit, duration))??,
                Wait::Forever => read.await?,
            };
            if count == 0 {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The next request's size prefix, or `None` when the client closed.
    pub(super) async fn read_size(
        &mut self,
        stream: &mut Transport,
        idle_limit: Option<Duration>,
    ) -> io::Result<Option<i32>> {
        let wait = idle_limit.map_or(Wait::Forever, Wait::EachRead);
        self.read_size_within(stream, wait).await
    }

    /// A new connection's first request's size, which must come by `setup`'s deadline (see
    /// [`Setup`]), or `None` when the client closed.
    pub(super) async fn read_first_size(
        &mut self,
        stream: &mut Transport,
        setup: &Setup,
    ) -> io::Result<Option<i32>> {
        let wait = setup.deadline.map_or(Wait::Forever, |(deadline, limit)| {
            Wait::Until(deadline, limit, Limit::Setup)
        });
        self.read_size_within(stream, wait).await
    }

    async fn read_size_within(
        &mut self,
        stream: &mut Transport,
        wait: Wait,
    ) -> io::Result<Option<i32>> {
        if !self.fill(stream, 4, wait).await? {
            return Ok(None);
        }
        let prefix = self.buffer.split_to(4);
        Ok(Some(ferrolog_records::be::i32_at(&prefix, 0)))
    }

    /// Reads the part of a request of `size` bytes the connection holds before the request is
    /// charged: all of a small one, the first [`OWN_BUFFER`] bytes of a larger one. `false`
    /// when the client closed first.
    pub(super) async fn read_own_part(
        &mut self,
        stream: &mut Transport,
        size: usize,
        arrival: &Arrival,
    ) -> io::Result<bool> {
        self.fill(stream, size.min(OWN_BUFFER), arrival.wait())
            .await
    }

    /// The request of `size` bytes, or `None` when the client closed before sending it all.
    pub(super) async fn read_frame(
        &mut self,
        stream: &mut Transport,
        size: usize,
        arrival: &Arrival,
    ) -> io::Result<Option<Bytes>> {
        if !self.fill(stream, size, arrival.wait()).await? {
            return Ok(None);
        }
        let frame = self.buffer.split_to(size).freeze();
        if size > OWN_BUFFER {
            // The buffer still shares the frame's large allocation, and would own it again once
            // the frame is dropped: keep only a copy of what the client already sent of its
            // next request.
            self.buffer = BytesMut::from(&self.buffer[..]);
        }
        Ok(Some(frame))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use tokio::io::AsyncWriteExt;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    async fn connected() -> (TcpStream, Transport) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (server, _) = listener.accept().await.unwrap();
        (client, Transport::Plain(server))
    }

    #[tokio::test]
    async fn a_large_request_leaves_no_large_buffer_behind() {
        let (mut client, mut server) = connected().await;
        let size = 1 << 20;
        let mut sent = vec![7u8; size];
        sent.extend_from_slice(b"next");
        client.write_all(&sent).await.unwrap();

        let mut inbound = Inbound::default();
        let arrival = Arrival::start(None);
        let frame = inbound
            .read_frame(&mut server, size, &arrival)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(frame.len(), size);
        drop(frame);
        inbound.fill(&mut server, 4, Wait::Forever).await.unwrap();
        assert_eq!(
            &inbound.buffer[..4],
            b"next",
            "the next request's bytes are kept"
        );
        assert!(
            !inbound.buffer.try_reclaim(OWN_BUFFER + 1),
            "the buffer holds no allocation larger than {OWN_BUFFER} bytes"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_that_trickles_past_its_limit_is_refused_unless_the_broker_held_it_up() {
        let (mut client, mut server) = connected().await;
        let limit = Duration::from_secs(30);
        client.write_all(&[1; 10]).await.unwrap();
        let mut inbound = Inbound::default();

        // The broker kept it waiting 20 s (for memory): the client has 50 s in all.
        let mut arrival = Arrival::start(Some(limit));
        arrival.paused_for(Duration::from_secs(20));
        let reading = inbound.read_frame(&mut server, 100, &arrival);
        let outcome = tokio::time::timeout(Duration::from_secs(49), reading).await;
        assert!(outcome.is_err(), "still waiting after 49 s");

        let arrival = Arrival::start(Some(limit));
        let started = Instant::now();
        let error = inbound
            .read_frame(&mut server, 100, &arrival)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert!(
            error
                .to_string()
                .contains("ferrolog.request.arrival.timeout.ms"),
            "{error}"
        );
        assert_eq!(started.elapsed(), limit);
    }

    #[tokio::test]
    async fn only_a_small_request_or_the_start_of_a_large_one_is_read_before_its_charge() {
        let (mut client, mut server) = connected().await;
        client.write_all(&vec![2u8; 3 * OWN_BUFFER]).await.unwrap();
        let mut inbound = Inbound::default();
        let arrival = Arrival::start(None);
        assert!(
            inbound
                .read_own_part(&mut server, 100, &arrival)
                .await
                .unwrap()
        );
        assert!(inbound.buffer.len() >= 100);
        assert!(
            inbound
                .read_own_part(&mut server, 3 * OWN_BUFFER, &arrival)
                .await
                .unwrap()
        );
        assert_eq!(
            inbound.buffer.len(),
            OWN_BUFFER,
            "the rest of the large request stays in the socket until it is charged"
        );
    }
}
