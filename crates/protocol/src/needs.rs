//! What an API needs allowed, as its row of the API table ([`crate::apis`]) declares it: the
//! operations on the whole request, which the router checks before the handler runs, and those
//! on each resource the request names, which the handler checks through the broker's `Asked`.

use crate::acl::{AclOperation, ResourceType};
use crate::errors;

/// What a need covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The whole request: the cluster, or the resource one field names. Checked by the router.
    Request,
    /// Each resource of its type the request names. Checked by the handler.
    Each,
    /// The request, in some of its forms only. Checked by the handler.
    Form,
}

/// One operation an API needs allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub resource: ResourceType,
    pub operation: AclOperation,
    pub scope: Scope,
    /// Another operation on the same resource that satisfies the need too (Kafka's ALTER on the
    /// cluster for WriteTxnMarkers' CLUSTER_ACTION).
    pub alternative: Option<AclOperation>,
}

/// What one API's row declares.
#[derive(Debug)]
pub struct Declared {
    pub needs: &'static [Need],
    /// The checks a handler makes besides its needs: other forms of the request, alternatives
    /// Kafka accepts, filters of what the answer shows.
    pub also: &'static [(ResourceType, AclOperation)],
}

impl Declared {
    /// Whether the row declares `operation` on `resource`, as a need or under `also`.
    pub fn declares(&self, resource: ResourceType, operation: AclOperation) -> bool {
        self.needs.iter().any(|need| {
            need.resource == resource
                && (need.operation == operation || need.alternative == Some(operation))
        }) || self.also.contains(&(resource, operation))
    }
}

/// The error code refusing an operation on a resource of this type.
pub fn refusal_code(resource: ResourceType) -> i16 {
    match resource {
        ResourceType::Topic => errors::TOPIC_AUTHORIZATION_FAILED,
        ResourceType::Group => errors::GROUP_AUTHORIZATION_FAILED,
        ResourceType::TransactionalId => errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _ => errors::CLUSTER_AUTHORIZATION_FAILED,
    }
}
