//! The TLS handshake of a connection on an SSL or SASL_SSL listener, within
//! `ferrolog.connection.setup.timeout.ms` of its accept (without it, within
//! `connections.max.idle.ms` and a minute at most). A failed handshake (an untrusted or missing client certificate
//! where one is required, a client speaking plaintext, no protocol or suite in common) is logged
//! as Kafka logs it ("Failed authentication ... (SSL handshake failed)"), counted, and closes
//! the connection at once: Kafka's failed-authentication delay is for SASL only.
//!
//! On an SSL listener a client certificate gives the principal (see [`crate::tls::principal`]);
//! a client without one is `User:ANONYMOUS`, and one whose certificate no
//! `ssl.principal.mapping.rules` rule maps is refused. On SASL_SSL, SASL gives the principal.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use super::inbound::Setup;
use super::transport::{TLS_READ_AHEAD, Transport};
use crate::listener::Listener;
use crate::tls::{TlsSettings, principal_of};

/// The longest a TLS handshake may take without a setup limit, whatever
/// `connections.max.idle.ms` says: an honest client takes milliseconds, and a connection slot
/// is held meanwhile.
const MAX_HANDSHAKE: Duration = Duration::from_secs(60);

/// The connection over TLS and, on an SSL listener with a client certificate, its principal;
/// `None` when the connection is to close.
pub(super) async fn accept(
    socket: TcpStream,
    peer: SocketAddr,
    listener: &Listener,
    tls: &TlsSettings,
    setup: &Setup,
    config: &crate::NetConfig,
) -> io::Result<Option<(Transport, Option<String>)>> {
    let handshake = tls
        .acceptor()
        .accept(tokio::io::BufReader::with_capacity(TLS_READ_AHEAD, socket));
    let limit = setup.left().unwrap_or_else(|| {
        config
            .connections_max_idle
            .map_or(MAX_HANDSHAKE, |idle| idle.min(MAX_HANDSHAKE))
    });
    let outcome = match tokio::time::timeout(limit, handshake).await {
        Ok(outcome) => outcome,
        Err(_) => {
            crate::metrics::record_setup_timeout();
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no TLS handshake within {} ms", limit.as_millis()),
            ))
        }
    };
    let stream = match outcome {
        Ok(stream) => stream,
        // rustls's refusals (an untrusted certificate, no protocol in common, bytes that are
        // not TLS) come as invalid data: those are failed authentications, as Kafka counts
        // them. A client that went away or stalled is not.
        Err(error) if error.kind() == io::ErrorKind::InvalidData => {
            crate::metrics::record_authentication(false);
            tracing::info!(%peer, listener = %listener.name, %error, "Failed authentication (SSL handshake failed)");
            return Ok(None);
        }
        Err(error) => {
            tracing::debug!(%peer, listener = %listener.name, %error, "closed during the TLS handshake");
            return Ok(None);
        }
    };
    if listener.sasl.is_some() {
        return Ok(Some((Transport::Tls(Box::new(stream)), None)));
    }
    let certificate = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .map(|certificate| certificate.as_ref().to_vec());
    let principal = match certificate {
        None => None,
        Some(certificate) => match principal_of(&certificate, &tls.principal_rules) {
            Ok(principal) => Some(principal),
            Err(reason) => {
                crate::metrics::record_authentication(false);
                tracing::info!(%peer, listener = %listener.name, reason = ?reason, "Failed authentication (no principal for the client certificate)");
                return Ok(None);
            }
        },
    };
    crate::metrics::record_authentication(true);
    Ok(Some((Transport::Tls(Box::new(stream)), principal)))
}
