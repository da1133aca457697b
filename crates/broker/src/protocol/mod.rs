//! The protocol's facts this broker relies on below its handlers: the table of the APIs it
//! serves ([`apis`]), what makes a request unanswerable, and the checks of a request that hold
//! whatever handles it. It depends on nothing of the broker above the ACL model, so the frame
//! checks, the authentication exchange and the router all build on it.

pub mod apis;
pub mod refuse;

use kafka_protocol::messages::ApiVersionsRequest;

/// A request this broker will not answer; the connection is closed.
#[derive(Debug)]
pub enum Unanswerable {
    /// It cannot be decoded, or asks for what this broker does not serve.
    Malformed(String),
    /// Serving it failed inside the broker (its blocking work panicked): only the connection
    /// that sent it closes.
    Failed(String),
}

impl Unanswerable {
    /// The error code it is counted as in the request metrics.
    pub(crate) fn error_code(&self) -> i16 {
        match self {
            Self::Malformed(_) => crate::errors::INVALID_REQUEST,
            Self::Failed(_) => crate::errors::UNKNOWN_SERVER_ERROR,
        }
    }
}

impl std::fmt::Display for Unanswerable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Malformed(what) => write!(f, "malformed request: {what}"),
            Self::Failed(what) => write!(f, "serving the request failed: {what}"),
        }
    }
}

/// Whether a request of `version` names the client's software as Kafka requires from version 3:
/// name and version each letters, digits, `-` and `.`, beginning and ending with a letter or a
/// digit.
pub fn names_software_validly(request: &ApiVersionsRequest, version: i16) -> bool {
    version < 3
        || (is_software_label(&request.client_software_name)
            && is_software_label(&request.client_software_version))
}

fn is_software_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |byte: &u8| byte.is_ascii_alphanumeric();
    let inner = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'-' || *byte == b'.';
    match bytes {
        [] => false,
        [only] => edge(only),
        [first, middle @ .., last] => edge(first) && edge(last) && middle.iter().all(inner),
    }
}
