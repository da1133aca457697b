//! The Kafka protocol as ferrolog's broker serves it, below everything that serves it: the
//! table of the APIs served ([`apis`]) and what each needs allowed ([`needs`], over Kafka's ACL
//! model, [`acl`]); the checks of a request frame before it is decoded ([`frame_shape`]); the
//! error codes ([`errors`]) and where each response carries them ([`error_codes`]); the resource a
//! request's field names ([`resource_name`]); what makes a request unanswerable; the response frame
//! that splices file regions ([`response`]). It knows nothing of sessions, coordinators or the
//! network, so each of those builds on it.

pub mod acl;
pub mod api_key;
pub mod apis;
pub mod consumer_protocol;
pub mod error_codes;
pub mod errors;
pub mod frame_shape;
pub mod messages;
pub mod needs;
pub mod resource_name;
pub mod response;
pub mod throttle_time;

pub use api_key::ApiKey;
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
    pub fn error_code(&self) -> i16 {
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
