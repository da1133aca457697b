//! Authorization probes: for each API the broker serves that needs an ACL, one request Kafka
//! refuses with an authorization error when the principal lacks the ACL Kafka checks for it, and
//! the error codes of any answer. Tests send the same probes to ferrolog and to Kafka 4.4 and
//! compare; built only with the `probes` feature.
//!
//! Which APIs have a probe, and what each answers, come from the API table
//! ([`crate::protocol::apis`]); each request is built beside its API's handler, as an
//! implementation of [`Probed`].

use bytes::{Bytes, BytesMut};
use ferrolog_protocol::ApiKey;
use ferrolog_protocol::messages::{
    DescribeShareGroupOffsetsRequest, ShareAcknowledgeRequest, ShareFetchRequest,
    StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Request, StrBytes};

use crate::authz::ResourceType;
use crate::error_codes::ErrorCodes;
use crate::errors::{
    CLUSTER_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
};

/// A request of an API that needs an ACL, about `topic` (and names starting with it) and `group`
/// (which the transactional APIs also name as their transactional id), that Kafka refuses with
/// an authorization error when the principal lacks the ACL the API table says it needs; with
/// the version it is sent at. Every API whose table row needs something implements it.
pub trait Probed: Request {
    fn probe(topic: &str, group: &str) -> (i16, Self);

    /// The probe of an API that names topics by id, given `topic`'s id.
    fn probe_by_id(topic: &str, group: &str, topic_id: uuid::Uuid) -> (i16, Self) {
        let _ = topic_id;
        Self::probe(topic, group)
    }
}

/// `$probed` for a row of the API table that needs something allowed, `$unprobed` for one that
/// needs nothing: such an API has no probe, and its request no [`Probed`] to name.
macro_rules! if_needs {
    ([] $probed:expr, $unprobed:expr) => {
        $unprobed
    };
    ([$($needs:tt)+] $probed:expr, $unprobed:expr) => {
        $probed
    };
}

/// The keys of the rows whose `needs` is empty, as a slice: `[keys so far]` followed by
/// `[needs] key` for each row left.
macro_rules! not_probed {
    ([$($keys:ident)*]) => {
        &[$(ApiKey::$keys),*]
    };
    ([$($keys:ident)*] [] $key:ident $($rows:tt)*) => {
        not_probed!([$($keys)* $key] $($rows)*)
    };
    ([$($keys:ident)*] [$($needs:tt)+] $key:ident $($rows:tt)*) => {
        not_probed!([$($keys)*] $($rows)*)
    };
}

/// The probes, from the API table: one for each API whose `needs` is not empty.
macro_rules! probe_table {
    ($($key:ident $min:literal ..= $max:literal, $request:ty, $run:ident $handler:path
        => $answer:ident, needs [$($needs:tt)*] $(, $column:ident [$($cell:tt)*])*;)*) => {
        /// The APIs without a probe, those the table says need nothing allowed: they need no
        /// ACL (ApiVersions), are answered ILLEGAL_SASL_STATE outside a SASL exchange (the SASL
        /// APIs), or refuse by leaving out what may not be described (ListGroups,
        /// ListTransactions).
        pub const NOT_PROBED: &[ApiKey] = not_probed!([] $([$($needs)*] $key)*);

        /// A request of `api` about `topic` (whose id is `topic_id`; and names starting with
        /// it) and `group_id` that Kafka refuses with an authorization error when the principal
        /// lacks the ACL it checks (see [`Probed`]); `None` for the APIs in [`NOT_PROBED`].
        pub fn probe(api: ApiKey, topic: &str, group_id: &str, topic_id: uuid::Uuid) -> Option<Probe> {
            match api {
                $(ApiKey::$key => if_needs!(
                    [$($needs)*] Some(Probe::of::<$request>(api, topic, group_id, topic_id)), None
                ),)*
                _ => None,
            }
        }

        impl Probe {
            /// The error codes of an answer to this probe (the response body, after its
            /// header), in the order the response carries them, `NONE` included.
            pub fn answer_codes(&self, body: Bytes) -> Result<Vec<i16>, String> {
                let codes = match self.api {
                    $(ApiKey::$key => if_needs!(
                        [$($needs)*] Some(self.codes::<$request>(body)), None
                    ),)*
                    _ => None,
                };
                codes.unwrap_or_else(|| Err(format!("{:?} has no probe", self.api)))
            }
        }
    };
}

ferrolog_protocol::served_apis!(probe_table);

/// The group the probes of the share groups' offset APIs name: `group` is a classic group in
/// the tests (they commit offsets for it), which those APIs refuse as not a share group before
/// they look at the topics; a group of this name does not exist, and is made by them. Its name
/// starts with `group`'s, so a prefixed ACL on `group` covers it.
pub fn share_group_of(group: &str) -> String {
    format!("{group}-queue")
}

/// The topic the DeleteTopics probe deletes, once it is allowed to: the test creates it, so that
/// an ALLOW that covers DESCRIBE but not DELETE meets an existing topic (refused), not a
/// missing one (UNKNOWN_TOPIC_OR_PARTITION).
pub fn doomed_topic(topic: &str) -> String {
    format!("{topic}-doomed")
}

/// One request: its API, version and encoded body (without the request header).
#[derive(Clone, Debug)]
pub struct Probe {
    /// The API.
    pub api: ApiKey,
    /// The version it is sent at.
    pub version: i16,
    /// The body.
    pub body: Bytes,
}

impl Probe {
    fn of<R: Probed>(api: ApiKey, topic: &str, group_id: &str, topic_id: uuid::Uuid) -> Self {
        let (version, request) = R::probe_by_id(topic, group_id, topic_id);
        let mut body = BytesMut::new();
        // Encoding a request built here at a version the broker serves cannot fail.
        #[allow(clippy::expect_used, reason = "built here, at a served version")]
        request.encode(&mut body, version).expect("a probe encodes");
        Self {
            api,
            version,
            body: body.freeze(),
        }
    }

    fn codes<R: Probed>(&self, mut body: Bytes) -> Result<Vec<i16>, String>
    where
        R::Response: ErrorCodes,
    {
        R::Response::decode(&mut body, self.version)
            .map(|response| response.error_codes())
            .map_err(|error| format!("{:?} v{}: {error}", self.api, self.version))
    }
}

/// `value` as a protocol string.
pub(crate) fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

/// A DescribeAcls filter matching every ACL.
pub fn match_any_acl() -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_name_filter(None)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_resource_type_filter(1)
        .with_pattern_type_filter(1)
        .with_operation(1)
        .with_permission_type(1)
}

/// A CreateAcls entry for `User:ANONYMOUS`, in Kafka's codes.
pub fn creation(
    resource_type: i8,
    name: &str,
    pattern_type: i8,
    host: &str,
    operation: i8,
    permission: i8,
) -> AclCreation {
    AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(text(name))
        .with_resource_pattern_type(pattern_type)
        .with_principal(text("User:ANONYMOUS"))
        .with_host(text(host))
        .with_operation(operation)
        .with_permission_type(permission)
}

/// The authorization refusal Kafka answers `api`'s probe with when the first operation the API
/// table says it needs is not allowed: the refusal of that operation's resource type.
pub fn refusal(api: ApiKey) -> i16 {
    match crate::protocol::apis::required_acls(api).first() {
        Some((ResourceType::Topic, _)) => TOPIC_AUTHORIZATION_FAILED,
        Some((ResourceType::Group, _)) => GROUP_AUTHORIZATION_FAILED,
        Some((ResourceType::TransactionalId, _)) => TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _ => CLUSTER_AUTHORIZATION_FAILED,
    }
}
