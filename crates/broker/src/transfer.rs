//! Writing a [`ResponseFrame`] to a client socket. Encoded chunks are written as they are; file
//! regions go either by `sendfile(2)` (the kernel copies page cache to the socket) or by `pread`
//! into a reused buffer and `write` — see [`FetchTransfer`] for which wins where.
//!
//! File regions are read on the connection's own task, as Kafka's network threads do with
//! `transferTo`: the bytes were just found by the fetch, so they are almost always in the page
//! cache.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;

use tokio::io::{AsyncWriteExt, Interest};
use tokio::net::TcpStream;

use crate::response::{Chunk, FileRegion, ResponseFrame};

/// How fetched record bytes travel from the segment file to the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FetchTransfer {
    /// `pread` into a per-connection buffer, then `write`. One more copy than sendfile, but on
    /// loopback with two cores it measured faster (docs/benchmarks.md): the receiver copies
    /// either way, and large user-space writes move more per wake-up.
    #[default]
    Copy,
    /// `sendfile(2)`: no copy through user space.
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

/// Largest piece of a file region read into memory at once in [`FetchTransfer::Copy`].
const COPY_BUFFER_BYTES: usize = 1 << 20;

/// Writes frames to one connection; keeps the copy buffer between responses.
#[derive(Debug)]
pub struct FrameWriter {
    transfer: FetchTransfer,
    buffer: Vec<u8>,
}

impl FrameWriter {
    pub fn new(transfer: FetchTransfer) -> Self {
        Self {
            transfer,
            buffer: Vec::new(),
        }
    }

    pub async fn write(&mut self, stream: &mut TcpStream, frame: ResponseFrame) -> io::Result<()> {
        for chunk in frame.chunks {
            match chunk {
                Chunk::Encoded(bytes) => stream.write_all(&bytes).await?,
                Chunk::File(region) => match self.transfer {
                    FetchTransfer::Copy => self.copy(stream, &region).await?,
                    FetchTransfer::Sendfile => send_file(stream, &region).await?,
                },
            }
        }
        Ok(())
    }

    async fn copy(&mut self, stream: &mut TcpStream, region: &FileRegion) -> io::Result<()> {
        let file = region.segment.log_file().file();
        let mut position = region.position;
        let mut remaining = region.length;
        while remaining > 0 {
            let piece = remaining.min(COPY_BUFFER_BYTES);
            self.buffer.resize(piece, 0);
            file.read_exact_at(&mut self.buffer, position)
                .map_err(|error| shrank(region, error))?;
            stream.write_all(&self.buffer).await?;
            position += piece as u64;
            remaining -= piece;
        }
        Ok(())
    }
}

async fn send_file(stream: &TcpStream, region: &FileRegion) -> io::Result<()> {
    let file = region.segment.log_file().file();
    let mut position = region.position;
    let mut remaining = region.length;
    while remaining > 0 {
        stream.writable().await?;
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
            region.segment.log_file().path().display(),
            region.length,
            region.position
        ),
    )
}
