//! SaslHandshake and SaslAuthenticate outside a SASL exchange: on a listener without SASL, or
//! again after the connection authenticated (re-authentication is not offered:
//! `connections.max.reauth.ms` is 0). Kafka answers both ILLEGAL_SASL_STATE; the exchange
//! itself is [`crate::sasl::authenticator`]'s.

use kafka_protocol::messages::{
    RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::errors::ILLEGAL_SASL_STATE;

pub fn handshake(
    _header: &RequestHeader,
    _request: &SaslHandshakeRequest,
) -> SaslHandshakeResponse {
    SaslHandshakeResponse::default().with_error_code(ILLEGAL_SASL_STATE)
}

pub fn authenticate(
    _header: &RequestHeader,
    _request: &SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(ILLEGAL_SASL_STATE)
        .with_error_message(Some(StrBytes::from_static_str(
            "SaslAuthenticate request received after successful authentication",
        )))
}
