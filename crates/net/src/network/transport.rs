//! What a connection's bytes travel over: the TCP socket itself, or TLS over it. Reads and
//! writes go through [`Transport`] either way; only a plain socket can take fetched bytes by
//! `sendfile`, as the file's bytes must be encrypted on their way out.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, BufReader, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// Bytes a TLS connection takes from its socket in one read. rustls asks for at most 4 KiB at a
/// time, a few thousand bytes less than one record; read straight from the socket that is a
/// system call and often a wake-up per few kilobytes (140,000 reads for a gigabyte produced,
/// against 2,700 in plaintext; docs/benchmarks.md). Reading ahead into this buffer lets each
/// call take what the socket holds, at the cost of this much memory per TLS connection.
pub const TLS_READ_AHEAD: usize = 64 * 1024;

/// The socket under TLS: read ahead by [`TLS_READ_AHEAD`], written as it is.
pub type TlsSocket = BufReader<TcpStream>;

/// One connection's stream.
#[derive(Debug)]
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream<TlsSocket>>),
}

impl Transport {
    /// The socket, when nothing stands between it and the client's bytes.
    pub fn plain_socket(&self) -> Option<&TcpStream> {
        match self {
            Transport::Plain(socket) => Some(socket),
            Transport::Tls(_) => None,
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_read(cx, buf),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_write(cx, buf),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_flush(cx),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_shutdown(cx),
            Transport::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}
