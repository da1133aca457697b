//! The start of a connection on a SASL listener: frames are read and handed to the
//! [`Authenticator`] until it authenticates the client or closes the connection. Nothing but
//! ApiVersions and the SASL exchange is served before then.
//!
//! What an unauthenticated client can make the broker hold is bounded like any request (the
//! request memory, `connections.max.idle.ms`) and, tighter, by `sasl.server.max.receive.size`:
//! a larger frame closes the connection, as in Kafka. A failed authentication holds the
//! connection for `connection.failed.authentication.delay.ms` before its answer and the close.

use std::io;
use std::sync::Arc;

use super::Shared;
use super::connection::Connection;
use super::inbound::Arrival;
use super::memory::{Charge, Sender};
use crate::listener::Listener;
use crate::sasl::SaslSettings;
use crate::sasl::authenticator::{Authenticator, Outcome};
use crate::session::Session;
use crate::{Service, frame_shape};

/// Runs the SASL exchange; the authenticated session on success, `None` when the connection is
/// to close.
pub(super) async fn authenticate(
    connection: &mut Connection<'_>,
    listener: &Arc<Listener>,
    settings: Arc<SaslSettings>,
    service: &Arc<dyn Service>,
    shared: &Shared,
) -> io::Result<Option<Session>> {
    let config = service.net_config();
    let idle_limit = config.connections_max_idle;
    let peer = connection.peer;
    let anonymous = Arc::new(Session::anonymous(peer, Arc::clone(listener)));
    let mut authenticator = Authenticator::new(settings);
    let mut turn_taken = false;
    loop {
        // The address's turn before the first credentials are read (not before: connections
        // that never get that far spend none of its turns): one that keeps failing is checked
        // no faster than its rate. No request memory is held while it waits.
        if !turn_taken && authenticator.awaits_credentials() {
            shared.auth_throttle.begin(peer.ip()).await;
            turn_taken = true;
        }
        let Some(size) = connection
            .inbound
            .read_size(connection.stream, idle_limit)
            .await?
        else {
            return Ok(None);
        };
        let too_large =
            usize::try_from(size).map_or(true, |size| size > config.sasl_max_receive_size);
        if too_large {
            return refuse(
                service.as_ref(),
                listener,
                connection,
                None,
                &format!(
                    "Failing SASL authentication due to invalid receive size ({size} bytes; sasl.server.max.receive.size is {})",
                    config.sasl_max_receive_size
                ),
                true,
            )
            .await;
        }
        let size = size as usize;
        let Some((frame, charge)) =
            receive_unauthenticated(connection, size, config, shared).await?
        else {
            return Ok(None);
        };
        match authenticator.receive(&frame, service.credentials(), service.tokens()) {
            Outcome::Dispatch => {
                if !answer_before_authentication(connection, service, frame, &anonymous).await? {
                    return Ok(None);
                }
            }
            Outcome::Answer(answer) => connection.writer.write(connection.stream, answer).await?,
            Outcome::Authenticated {
                answer,
                principal,
                token,
            } => {
                shared.auth_throttle.succeeded(peer.ip());
                connection.writer.write(connection.stream, answer).await?;
                crate::metrics::record_authentication(true);
                tracing::debug!(%peer, listener = %listener.name, principal, "authenticated");
                return Ok(Some(anonymous.authenticated_as(&principal, token)));
            }
            Outcome::Close {
                answer,
                reason,
                delayed,
            } => {
                // The delay holds the connection, not the request memory.
                drop(charge);
                return refuse(
                    service.as_ref(),
                    listener,
                    connection,
                    answer,
                    &reason,
                    delayed,
                )
                .await;
            }
        }
        drop(charge);
    }
}

/// Answers a request the exchange lets through before authentication (ApiVersions), as the
/// anonymous session; `false` when the connection is to close.
async fn answer_before_authentication(
    connection: &mut Connection<'_>,
    service: &Arc<dyn Service>,
    frame: bytes::Bytes,
    anonymous: &Arc<Session>,
) -> io::Result<bool> {
    let peer = connection.peer;
    let checked = match frame_shape::scan(frame) {
        Ok(checked) => checked,
        Err(malformed) => {
            tracing::warn!(%peer, error = %malformed, "closing a connection after a malformed request");
            return Ok(false);
        }
    };
    let answered = match Arc::clone(service)
        .dispatch(checked, Arc::clone(anonymous))
        .await
    {
        Ok(reply) => reply.into_response().await,
        Err(error) => Err(error),
    };
    match answered {
        Ok(Some(response)) => connection.writer.write(connection.stream, response).await?,
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(%peer, error = %error, "closing a connection after a request it cannot answer");
            return Ok(false);
        }
    }
    Ok(true)
}

/// A request of `size` bytes from a client not yet authenticated, charged as
/// [`super::memory`] says for one (its share of the memory for requests still arriving is
/// smaller); `None` when the connection is to close.
async fn receive_unauthenticated(
    connection: &mut Connection<'_>,
    size: usize,
    config: &crate::NetConfig,
    shared: &Shared,
) -> io::Result<Option<(bytes::Bytes, Charge)>> {
    let peer = connection.peer;
    let mut arrival = Arrival::start(config.request_arrival_timeout);
    if !connection
        .inbound
        .read_own_part(connection.stream, size, &arrival)
        .await?
    {
        return Ok(None);
    }
    let waiting_since = tokio::time::Instant::now();
    let charged = shared
        .memory
        .charge_request(size as u64, Sender::Unauthenticated)
        .await;
    arrival.paused_for(waiting_since.elapsed());
    let mut charge = match charged {
        Ok(charge) => charge,
        Err(too_large) => {
            tracing::warn!(%peer, size, capacity = too_large.capacity, "closing a connection: request larger than queued.max.request.bytes");
            return Ok(None);
        }
    };
    let Some(frame) = connection
        .inbound
        .read_frame(connection.stream, size, &arrival)
        .await?
    else {
        return Ok(None);
    };
    charge.arrived();
    Ok(Some((frame, charge)))
}

/// Ends an exchange that did not authenticate. A failed authentication (`delayed`: a wrong
/// password, a refused mechanism, a request out of place after the handshake) is logged and
/// counted as Kafka counts it, and answered, if there is an answer, after the
/// failed-authentication delay; anything else (a client that does not speak SASL, a frame that
/// is not a request) closes at once.
async fn refuse(
    service: &dyn Service,
    listener: &Listener,
    connection: &mut Connection<'_>,
    answer: Option<crate::response::ResponseFrame>,
    reason: &str,
    delayed: bool,
) -> io::Result<Option<Session>> {
    if !delayed {
        tracing::info!(peer = %connection.peer, listener = %listener.name, reason = ?reason, "closing a connection before authentication");
        return Ok(None);
    }
    crate::metrics::record_authentication(false);
    tracing::info!(peer = %connection.peer, listener = %listener.name, reason = ?reason, "Failed authentication");
    tokio::time::sleep(service.net_config().failed_authentication_delay).await;
    if let Some(answer) = answer {
        connection.writer.write(connection.stream, answer).await?;
    }
    Ok(None)
}
