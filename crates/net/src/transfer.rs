//! Writing a [`ResponseFrame`] to a client connection. Encoded chunks are written as they are;
//! file regions go either by `sendfile(2)` (the kernel copies page cache to the socket) or by
//! `pread` into a reused buffer and `write` — see [`FetchTransfer`] for which wins where. Over
//! TLS file regions always go through a buffer, to be encrypted.
//!
//! File regions are read on the connection's own task, as Kafka's network threads do with
//! `transferTo`: the bytes were just found by the fetch, so they are almost always in the page
//! cache.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;

use crate::network::transport::Transport;
use crate::response::{Chunk, FileRegion, ResponseFrame};

/// How fetched record bytes travel from the segment file to the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchTransfer {
    /// `pread` into a per-connection buffer, then `write`. One more copy than sendfile; on
    /// loopback with two cores it moved as much per second or a little more for one librdkafka
    /// consumer, at two to three times the broker's CPU per byte (docs/benchmarks.md).
    Copy,
    /// `sendfile(2)`: no copy through user space, as Kafka's `transferTo`. The default: under
    /// the same consumers it cost the broker well under half the CPU per gigabyte `copy` did
    /// with 64 partitions, leaving the cores to the clients (docs/benchmarks.md).
    #[default]
    Sendfile,
}

impl std::str::FromStr for FetchTransfer {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "copy" => Ok(Self::Copy),
            "sendfile" => Ok(Self::Sendfile),
            other => Err(format!("expected copy or sendfile, got {other:?}")),
        }
    }
}

/// Largest piece of a file region read into memory at once in [`FetchTransfer::Copy`], and the
/// largest piece of encoded bytes written in one go (each piece must make progress within
/// `connections.max.idle.ms`).
const PIECE_BYTES: usize = 1 << 20;
/// The most copy buffers lent at once; a response written while all are lent goes by
/// `sendfile`, which needs none, or over TLS through a buffer of [`TLS_PIECE_BYTES`].
const COPY_BUFFERS: usize = 16;
/// The buffer a TLS connection copies fetched bytes through while every copy buffer is lent:
/// one TLS record's worth.
const TLS_PIECE_BYTES: usize = 16 * 1024;

/// The buffers that carry fetched bytes from a segment to a socket, lent to a connection only
/// while it writes a response: idle connections hold none, a steady load reuses them, and
/// clients that stop reading their responses hold at most [`COPY_BUFFERS`] of them.
#[derive(Debug, Default)]
pub struct CopyBuffers {
    state: parking_lot::Mutex<Lent>,
}

#[derive(Debug, Default)]
struct Lent {
    spare: Vec<Vec<u8>>,
    out: usize,
}

impl CopyBuffers {
    /// A buffer, or `None` when every buffer is lent. It comes back when the loan is dropped,
    /// also when the write it served is cancelled.
    fn take(self: &Arc<Self>) -> Option<Loan> {
        let mut state = self.state.lock();
        if state.out >= COPY_BUFFERS {
            return None;
        }
        state.out += 1;
        let buffer = state.spare.pop().unwrap_or_else(|| vec![0; PIECE_BYTES]);
        Some(Loan {
            buffers: Arc::clone(self),
            buffer,
        })
    }
}

/// A lent copy buffer.
#[derive(Debug)]
struct Loan {
    buffers: Arc<CopyBuffers>,
    buffer: Vec<u8>,
}

impl Drop for Loan {
    fn drop(&mut self) {
        let mut state = self.buffers.state.lock();
        state.out -= 1;
        state.spare.push(std::mem::take(&mut self.buffer));
    }
}

/// Writes frames to one connection. A write that makes no progress for the idle limit
/// (`connections.max.idle.ms`: a client that stopped reading) fails, closing the connection.
#[derive(Debug)]
pub struct FrameWriter {
    transfer: FetchTransfer,
    idle_limit: Option<Duration>,
    buffers: Arc<CopyBuffers>,
}

impl FrameWriter {
    pub fn new(
        transfer: FetchTransfer,
        idle_limit: Option<Duration>,
        buffers: Arc<CopyBuffers>,
    ) -> Self {
        Self {
            transfer,
            idle_limit,
            buffers,
        }
    }

    pub async fn write(&mut self, stream: &mut Transport, frame: ResponseFrame) -> io::Result<()> {
        let has_regions = frame
            .chunks
            .iter()
            .any(|chunk| matches!(chunk, Chunk::File(_)));
        let tls = stream.plain_socket().is_none();
        let mut loan = match self.transfer {
            _ if !has_regions => None,
            FetchTransfer::Copy => self.buffers.take(),
            FetchTransfer::Sendfile if tls => self.buffers.take(),
            FetchTransfer::Sendfile => None,
        };
        for chunk in frame.chunks {
            match (chunk, &mut loan) {
                (Chunk::Encoded(bytes), _) => self.write_pieces(stream, &bytes).await?,
                (Chunk::File(region), Some(loan)) => {
                    self.copy(stream, &region, &mut loan.buffer).await?;
                }
                (Chunk::File(region), None) => match stream.plain_socket() {
                    Some(socket) => send_file(socket, &region, self.idle_limit).await?,
                    None => {
                        let mut buffer = vec![0; TLS_PIECE_BYTES];
                        self.copy(stream, &region, &mut buffer).await?;
                    }
                },
            }
        }
        // TLS keeps what it has not yet sent; a plain socket has nothing to flush.
        within(self.idle_limit, stream.flush()).await
    }

    /// Writes `bytes` a piece at a time, each within the idle limit.
    async fn write_pieces(&self, stream: &mut Transport, bytes: &[u8]) -> io::Result<()> {
        for piece in bytes.chunks(PIECE_BYTES) {
            within(self.idle_limit, stream.write_all(piece)).await?;
        }
        Ok(())
    }

    async fn copy(
        &self,
        stream: &mut Transport,
        region: &FileRegion,
        buffer: &mut [u8],
    ) -> io::Result<()> {
        let file = region.slice.file();
        let mut position = region.slice.position().bytes();
        let mut remaining = region.length;
        while remaining > 0 {
            let piece = remaining.min(buffer.len());
            file.read_exact_at(&mut buffer[..piece], position)
                .map_err(|error| shrank(region, error))?;
            within(self.idle_limit, stream.write_all(&buffer[..piece])).await?;
            position += piece as u64;
            remaining -= piece;
        }
        Ok(())
    }
}

/// Runs a write, failing it when it makes no progress within `limit`.
async fn within<T>(
    limit: Option<Duration>,
    write: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, write).await.map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client read nothing for connections.max.idle.ms ({} ms)",
                    limit.as_millis()
                ),
            )
        })?,
        None => write.await,
    }
}

async fn send_file(
    stream: &TcpStream,
    region: &FileRegion,
    idle_limit: Option<Duration>,
) -> io::Result<()> {
    let file = region.slice.file();
    let mut position = region.slice.position().bytes();
    let mut remaining = region.length;
    while remaining > 0 {
        within(idle_limit, stream.writable()).await?;
        let sent = stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream.as_fd(), file.as_fd(), Some(&mut position), remaining)
                .map_err(io::Error::from)
        });
        match sent {
            Ok(0) => {
                return Err(shrank(
                    region,
                    io::Error::from(io::ErrorKind::UnexpectedEof),
                ));
            }
            Ok(count) => remaining -= count,
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The segment got shorter (truncated) after the fetch chose its bytes. The size prefix already
/// promised them, so the connection cannot continue; Kafka closes it the same way.
fn shrank(region: &FileRegion, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!(
            "segment {} shrank below {} bytes at position {} while being sent: {error}",
            region.slice.path().display(),
            region.length,
            region.slice.position()
        ),
    )
}
