//! Authorization with Kafka's ACL model and the semantics of its `StandardAuthorizer`.
//!
//! [`acl`] holds the model (resource patterns, access entries, Kafka's codes); [`standard`] the
//! decision, a pure function of the ACLs, `super.users`, `allow.everyone.if.no.acl.found` and
//! the request's principal, client address, operation and resource, over the ACLs as [`index`]
//! holds them; [`store`] the ACLs in force and their copy in the data directories. [`access::Access`] answers; handlers
//! ask it through [`asked::Asked`], only what their API's row declares.

pub mod access;
pub mod asked;
pub mod index;
pub mod standard;
pub mod store;

pub use ferrolog_protocol::acl;

pub use access::{Access, STANDARD_AUTHORIZER};
pub use acl::{
    ANONYMOUS, ANY_USER, AccessEntry, AclBinding, AclFilter, AclOperation, CLUSTER_NAME,
    EntryFilter, PatternFilter, PatternType, PatternTypeFilter, Permission, ResourcePattern,
    ResourceType, WILDCARD,
};
pub use asked::Asked;
pub use index::AclIndex;
pub use standard::{
    AuthorizerConfig, Decision, Requester, allow_covers, authorize, authorize_by_resource_type,
    authorized_operations,
};

#[cfg(test)]
mod tests;
