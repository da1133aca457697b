//! One connection's SASL exchange on a SASL listener, as Kafka's server authenticator runs it,
//! without I/O: the network layer hands it each frame that arrives before the connection is
//! authenticated and does what it answers ([`Outcome`]).
//!
//! The order Kafka allows: ApiVersions (optional, and again only after a version it did not
//! support), then SaslHandshake naming an enabled mechanism, then the mechanism's tokens, in
//! SaslAuthenticate requests after a SaslHandshake v1, or bare (a size and the token) after
//! v0. Anything else closes the connection without an answer: at once before the handshake,
//! as Kafka does; after it with the delay below (Kafka first answers the request with
//! ILLEGAL_SASL_STATE). A failed authentication is answered (SASL_AUTHENTICATION_FAILED with
//! Kafka's message; for bare tokens, nothing) and the connection closed, both after
//! `connection.failed.authentication.delay.ms`, as Kafka delays them, so that guessing
//! passwords is slow. Once authenticated, the principal is `User:<name>`.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use ferrolog_protocol::ApiKey;
use ferrolog_records::be;
use kafka_protocol::messages::{
    ApiVersionsRequest, RequestHeader, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::scram::Named;
use super::scram::{Refusal, ScramServer, Step};
use super::{Mechanism, SaslSettings, ScramStore};
use crate::response::{Chunk, ResponseFrame};
use crate::tokens::DelegationTokens;

const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// What the connection does with a frame that arrived before authentication.
#[derive(Debug)]
pub enum Outcome {
    /// Serve it as any request (ApiVersions, which needs no principal).
    Dispatch,
    /// Write this answer; the exchange goes on.
    Answer(ResponseFrame),
    /// Write this answer; the connection is now authenticated as `principal` (with a
    /// delegation token when `token`).
    Authenticated {
        answer: ResponseFrame,
        principal: String,
        token: bool,
    },
    /// Close the connection: after the failed-authentication delay when `delayed`, writing
    /// `answer` first if there is one. `reason` is for the broker's log.
    Close {
        answer: Option<ResponseFrame>,
        reason: String,
        delayed: bool,
    },
}

/// What the exchange waits for.
#[derive(Debug)]
enum State {
    /// ApiVersions or SaslHandshake.
    HandshakeOrVersions,
    /// SaslHandshake (ApiVersions was answered).
    Handshake,
    /// The mechanism's next token, in a SaslAuthenticate request when `framed`.
    Token {
        mechanism: Mechanism,
        framed: bool,
        scram: Option<ScramServer>,
    },
    /// Nothing more: the exchange ended.
    Ended,
}

/// One connection's exchange.
#[derive(Debug)]
pub struct Authenticator {
    settings: Arc<SaslSettings>,
    state: State,
}

impl Authenticator {
    pub fn new(settings: Arc<SaslSettings>) -> Self {
        Self {
            settings,
            state: State::HandshakeOrVersions,
        }
    }

    /// Whether the next frame carries the mechanism's tokens: credentials, which a guesser
    /// would send.
    pub fn awaits_credentials(&self) -> bool {
        matches!(self.state, State::Token { .. })
    }

    /// Takes the next frame (header and body, without its size).
    pub fn receive(
        &mut self,
        frame: &Bytes,
        credentials: &ScramStore,
        tokens: &DelegationTokens,
    ) -> Outcome {
        match std::mem::replace(&mut self.state, State::Ended) {
            State::HandshakeOrVersions => self.handshake(frame, true),
            State::Handshake => self.handshake(frame, false),
            State::Token {
                mechanism,
                framed,
                scram,
            } => self.token(frame, mechanism, framed, scram, (credentials, tokens)),
            State::Ended => close("a frame after the SASL exchange ended", false),
        }
    }

    fn handshake(&mut self, frame: &Bytes, versions_allowed: bool) -> Outcome {
        let Some((api, version)) = api_of(frame) else {
            return close(
                "Invalid request, potential reasons: kafka client configured with the wrong security protocol, it does not support KIP-43 or it is not a kafka client.",
                false,
            );
        };
        match api {
            ApiKey::ApiVersions if versions_allowed => {
                let supported = crate::protocol::apis::supported_range(api)
                    .is_some_and(|(min, max)| (min..=max).contains(&version));
                // A request that does not decode is answered by the dispatcher's rules; the
                // client does not move on after it either.
                let valid = decode::<ApiVersionsRequest>(frame, api, version).is_some_and(
                    |(_, request)| crate::protocol::names_software_validly(&request, version),
                );
                // After an unsupported version, or software names Kafka refuses, the client may
                // ask again.
                self.state = if supported && valid {
                    State::Handshake
                } else {
                    State::HandshakeOrVersions
                };
                Outcome::Dispatch
            }
            ApiKey::ApiVersions => {
                close("a second ApiVersions request before SaslHandshake", false)
            }
            ApiKey::SaslHandshake if (0..=1).contains(&version) => {
                let Some((header, request)) = decode::<SaslHandshakeRequest>(frame, api, version)
                else {
                    return close("a malformed SaslHandshake request", false);
                };
                let mechanisms: Vec<StrBytes> = self
                    .settings
                    .mechanisms
                    .iter()
                    .map(|mechanism| StrBytes::from_static_str(mechanism.name()))
                    .collect();
                let asked = request.mechanism.as_str();
                let chosen = Mechanism::from_name(asked).filter(|m| self.settings.enables(*m));
                let Some(mechanism) = chosen else {
                    let response = SaslHandshakeResponse::default()
                        .with_error_code(UNSUPPORTED_SASL_MECHANISM)
                        .with_mechanisms(mechanisms);
                    return Outcome::Close {
                        answer: encode(&header, api, version, &response),
                        reason: format!("Unsupported SASL mechanism {asked}"),
                        delayed: true,
                    };
                };
                let response = SaslHandshakeResponse::default().with_mechanisms(mechanisms);
                let Some(answer) = encode(&header, api, version, &response) else {
                    return close("the SaslHandshake answer could not be encoded", false);
                };
                self.state = State::Token {
                    mechanism,
                    framed: version >= 1,
                    scram: mechanism.scram().map(ScramServer::new),
                };
                Outcome::Answer(answer)
            }
            other => close(
                &format!("Unexpected Kafka request of type {other:?} during SASL handshake."),
                false,
            ),
        }
    }

    fn token(
        &mut self,
        frame: &Bytes,
        mechanism: Mechanism,
        framed: bool,
        mut scram: Option<ScramServer>,
        (credentials, tokens): (&ScramStore, &DelegationTokens),
    ) -> Outcome {
        let (request, token) = match token_of(frame, framed) {
            Ok(parsed) => parsed,
            Err(closing) => return closing,
        };
        let step = match (&mut scram, mechanism) {
            (Some(server), _) => server
                .step(
                    &token,
                    |named| match named {
                        Named::User(user) => credentials
                            .credential(user, mechanism)
                            .map(|credential| (credential, user.to_owned())),
                        Named::Token(id) => tokens.scram_credential(id, mechanism),
                    },
                    &super::scram::server_nonce(),
                )
                .map(|step| match step {
                    Step::Challenge(challenge) => (challenge, None),
                    Step::Authenticated {
                        username,
                        token,
                        server_final,
                    } => (server_final, Some((username, token))),
                }),
            (None, _) => self
                .settings
                .plain_users
                .authenticate(&token)
                .map(|username| (Vec::new(), Some((username, false))))
                .map_err(Refusal::Told),
        };
        match step {
            Ok((reply, username)) => {
                let answer = match &request {
                    Some((header, version)) => {
                        let response = SaslAuthenticateResponse::default()
                            .with_error_message(Some(StrBytes::default()))
                            .with_auth_bytes(Bytes::from(reply))
                            // No re-authentication (connections.max.reauth.ms = 0).
                            .with_session_lifetime_ms(0);
                        encode(header, ApiKey::SaslAuthenticate, *version, &response)
                    }
                    None => Some(bare_token(&reply)),
                };
                let Some(answer) = answer else {
                    return close("the SaslAuthenticate answer could not be encoded", false);
                };
                match username {
                    Some((username, token)) => Outcome::Authenticated {
                        answer,
                        principal: format!("User:{username}"),
                        token,
                    },
                    None => {
                        self.state = State::Token {
                            mechanism,
                            framed,
                            scram,
                        };
                        Outcome::Answer(answer)
                    }
                }
            }
            Err(refusal) => refused(refusal, mechanism, request),
        }
    }
}

/// The header and version of a framed SaslAuthenticate request; `None` for a bare token.
type AuthenticateHeader = Option<(RequestHeader, i16)>;

fn close(reason: &str, delayed: bool) -> Outcome {
    Outcome::Close {
        answer: None,
        reason: reason.to_owned(),
        delayed,
    }
}

/// The API and version of a frame that starts like a Kafka request.
fn api_of(frame: &[u8]) -> Option<(ApiKey, i16)> {
    let head = frame.get(..4)?;
    let api = ApiKey::try_from(be::i16_at(head, 0)).ok()?;
    Some((api, be::i16_at(head, 2)))
}

fn decode<R: Decodable>(frame: &Bytes, api: ApiKey, version: i16) -> Option<(RequestHeader, R)> {
    let mut body = frame.clone();
    let header = RequestHeader::decode(&mut body, api.request_header_version(version)).ok()?;
    let request = R::decode(&mut body, version).ok()?;
    Some((header, request))
}

fn encode<R: Encodable>(
    header: &RequestHeader,
    api: ApiKey,
    version: i16,
    response: &R,
) -> Option<ResponseFrame> {
    let mut out = BytesMut::with_capacity(128);
    out.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(header.correlation_id)
        .encode(&mut out, api.response_header_version(version))
        .ok()?;
    response.encode(&mut out, version).ok()?;
    let size = i32::try_from(out.len() - 4).ok()?;
    out[..4].copy_from_slice(&size.to_be_bytes());
    Some(ResponseFrame {
        chunks: vec![Chunk::Encoded(out.freeze())],
    })
}

/// A token sent bare, after a SaslHandshake v0: its size, then its bytes.
fn bare_token(token: &[u8]) -> ResponseFrame {
    let mut out = BytesMut::with_capacity(4 + token.len());
    out.put_i32(token.len() as i32);
    out.put_slice(token);
    ResponseFrame {
        chunks: vec![Chunk::Encoded(out.freeze())],
    }
}

/// A SaslAuthenticate request's header and version (`None` for a bare token, after
/// SaslHandshake v0) and its token; the closing outcome for a frame out of place.
fn token_of(frame: &Bytes, framed: bool) -> Result<(AuthenticateHeader, Bytes), Outcome> {
    if framed {
        match api_of(frame) {
            Some((ApiKey::SaslAuthenticate, version)) if (0..=2).contains(&version) => {
                let api = ApiKey::SaslAuthenticate;
                let Some((header, request)) =
                    decode::<SaslAuthenticateRequest>(frame, api, version)
                else {
                    return Err(close("a malformed SaslAuthenticate request", false));
                };
                Ok((Some((header, version)), request.auth_bytes))
            }
            Some((ApiKey::SaslAuthenticate, version)) => Err(close(
                &format!("SaslAuthenticate version {version} is not supported"),
                false,
            )),
            Some((other, _)) => Err(close(
                &format!("Unexpected Kafka request of type {other:?} during SASL authentication."),
                true,
            )),
            None => Err(close(
                "a frame that is not a Kafka request during SASL authentication",
                false,
            )),
        }
    } else {
        Ok((None, frame.clone()))
    }
}

/// Closes the exchange after a refusal, answering it when the token came framed.
fn refused(refusal: Refusal, mechanism: Mechanism, request: AuthenticateHeader) -> Outcome {
    // Every failure is delayed, also the generic SCRAM ones after a SaslHandshake
    // v0, which Kafka closes at once: guessing must not be faster that way.
    let delayed = true;
    let message = match refusal {
        Refusal::Told(message) => message,
        Refusal::Generic => format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        ),
    };
    let answer = request.and_then(|(header, version)| {
        let response = SaslAuthenticateResponse::default()
            .with_error_code(SASL_AUTHENTICATION_FAILED)
            .with_error_message(Some(StrBytes::from_string(message.clone())));
        encode(&header, ApiKey::SaslAuthenticate, version, &response)
    });
    Outcome::Close {
        answer,
        reason: message,
        delayed,
    }
}
