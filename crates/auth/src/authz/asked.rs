//! What a request may do, as its row of the API table declares it: the one door from a handler
//! to the authorizer.
//!
//! A row lists what its API needs (`needs`): operations on the whole request (on the cluster,
//! or on the one group or transactional id a field names), which the router checks before the
//! handler runs and answers itself when refused; and operations on each resource the request
//! names (`each`), which the handler asks about name by name, since only it knows where each
//! answer goes. A row may also list the other checks its handler makes (`also`): the forms and
//! alternatives Kafka also accepts and the filters of what an answer shows. A handler asks
//! through [`Asked`], which refuses any check its row does not declare, so what the table says
//! is what is enforced.

use kafka_protocol::messages::RequestHeader;

pub use ferrolog_protocol::needs::{Declared, Need, Scope, refusal_code};

use super::access::Access;
use super::acl::{AclOperation, CLUSTER_NAME, ResourceType};
use crate::session::Session;

/// One request as its handler sees it: who asks, with which header, and what its row lets the
/// handler check.
#[derive(Debug)]
pub struct Asked<'a> {
    access: &'a Access,
    session: &'a Session,
    header: &'a RequestHeader,
    declared: &'static Declared,
}

impl<'a> Asked<'a> {
    pub fn new(
        access: &'a Access,
        session: &'a Session,
        header: &'a RequestHeader,
        declared: &'static Declared,
    ) -> Self {
        Self {
            access,
            session,
            header,
            declared,
        }
    }

    pub fn session(&self) -> &'a Session {
        self.session
    }

    pub fn header(&self) -> &'a RequestHeader {
        self.header
    }

    /// The request's version.
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    /// The refusal of `need`, a request-level need of the row, for a request whose field names
    /// `name` (`None` for a need on the cluster). For the router, which checks these before the
    /// handler runs.
    pub fn request_refusal(&self, need: &Need, name: Option<&str>) -> Option<i16> {
        debug_assert!(need.scope == Scope::Request && self.declared.needs.contains(need));
        debug_assert_eq!(name.is_none(), need.resource == ResourceType::Cluster);
        let name = name.unwrap_or(CLUSTER_NAME);
        let allowed = |operation| {
            self.access
                .allows(self.session, operation, need.resource, name)
        };
        let satisfied = allowed(need.operation) || need.alternative.is_some_and(allowed);
        (!satisfied).then(|| refusal_code(need.resource))
    }

    /// The first refusal, in the row's order, of the `each` needs of `resource`'s type for the
    /// resource `name`; `None` when all are allowed.
    pub fn refusal(&self, resource: ResourceType, name: &str) -> Option<i16> {
        let mut needs = self
            .declared
            .needs
            .iter()
            .filter(|need| need.resource == resource && need.scope == Scope::Each)
            .peekable();
        if needs.peek().is_none() {
            // A handler asking what its row does not declare: refused, never allowed unseen.
            debug_assert!(false, "no `each` need of {resource} is declared");
            return Some(refusal_code(resource));
        }
        needs
            .find(|need| {
                !self
                    .access
                    .allows(self.session, need.operation, resource, name)
            })
            .map(|need| refusal_code(need.resource))
    }

    /// Whether the `each` needs of `resource`'s type allow `name`.
    pub fn allows(&self, resource: ResourceType, name: &str) -> bool {
        self.refusal(resource, name).is_none()
    }

    /// Whether `operation` on `resource`:`name` is allowed: a check the row declares, as a need
    /// or under `also`.
    pub fn may(&self, operation: AclOperation, resource: ResourceType, name: &str) -> bool {
        self.checks(resource, operation)
            && self.access.allows(self.session, operation, resource, name)
    }

    /// Whether `operation` on the cluster is allowed, as [`Self::may`].
    pub fn may_on_cluster(&self, operation: AclOperation) -> bool {
        self.may(operation, ResourceType::Cluster, CLUSTER_NAME)
    }

    /// Whether `operation` is allowed on at least one resource of the type (Kafka's
    /// `authorizeByResourceType`), as [`Self::may`].
    pub fn may_on_some(&self, operation: AclOperation, resource: ResourceType) -> bool {
        self.checks(resource, operation)
            && self
                .access
                .allows_on_some(self.session, operation, resource)
    }

    /// Kafka's `authorizedOperations` bit field of a resource, which an answer may report.
    pub fn authorized_operations(&self, resource: ResourceType, name: &str) -> i32 {
        self.access
            .authorized_operations(self.session, resource, name)
    }

    fn checks(&self, resource: ResourceType, operation: AclOperation) -> bool {
        let declared = self.declared.declares(resource, operation);
        debug_assert!(declared, "{operation} on {resource} is not declared");
        declared
    }
}
