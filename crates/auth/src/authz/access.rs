//! What the broker asks: may this session do this operation on this resource? Handlers ask
//! through [`super::asked::Asked`], which lets them ask only what their API's row declares.
//!
//! Without `authorizer.class.name` every request is allowed, as in Kafka without an authorizer,
//! and the ACL APIs answer SECURITY_DISABLED. With Kafka's `StandardAuthorizer` named there,
//! each question is decided by [`super::standard`] over the ACLs in force.

use std::sync::Arc;

use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;

use super::acl::{AclOperation, ResourceType};
use super::standard::{self, AuthorizerConfig, Decision};
use super::store::AclStore;
use crate::session::Session;

/// The value of `authorizer.class.name` that turns authorization on: Kafka's KRaft authorizer,
/// whose semantics ferrolog implements.
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The broker's authorization.
#[derive(Debug)]
pub struct Access {
    authorizer: Option<Authorizer>,
}

#[derive(Debug)]
struct Authorizer {
    config: AuthorizerConfig,
    acls: AclStore,
}

impl Access {
    /// No authorizer: everything is allowed.
    pub fn disabled() -> Self {
        Self { authorizer: None }
    }

    /// `StandardAuthorizer` with `config`, over the ACLs stored in the data directories, at
    /// most `max_acls` of them (`ferrolog.max.acls`).
    pub fn standard(
        manager: Arc<LogManager>,
        config: AuthorizerConfig,
        max_acls: usize,
        rollback: crate::stored::Rollback,
    ) -> Result<Self, StorageError> {
        let offline = manager.offline_dir_count();
        if offline > 0 {
            tracing::warn!(
                offline,
                "the ACLs are read from the online data directories only: an ACL change stored only in an offline one is not in force until it is back, and is lost if the ACLs change before then"
            );
        }
        Ok(Self {
            authorizer: Some(Authorizer {
                config,
                acls: AclStore::open(manager, max_acls, rollback)?,
            }),
        })
    }

    /// The ACLs, or `None` when no authorizer is configured (the ACL APIs then answer
    /// SECURITY_DISABLED).
    pub fn acls(&self) -> Option<&AclStore> {
        self.authorizer.as_ref().map(|authorizer| &authorizer.acls)
    }

    /// Whether `session` may do `operation` on the resource `resource_type`:`name`.
    pub(super) fn allows(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> bool {
        let Some(authorizer) = &self.authorizer else {
            return true;
        };
        let decision = standard::authorize(
            &authorizer.acls.snapshot(),
            &authorizer.config,
            session.requester(),
            operation,
            resource_type,
            name,
        );
        if decision == Decision::Denied {
            tracing::debug!(
                principal = session.principal(),
                host = session.host(),
                %operation,
                %resource_type,
                name,
                "denied"
            );
        }
        decision == Decision::Allowed
    }

    /// Whether `session` may do `operation` on at least one resource of the type (Kafka's
    /// `authorizeByResourceType`).
    pub(super) fn allows_on_some(
        &self,
        session: &Session,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        let Some(authorizer) = &self.authorizer else {
            return true;
        };
        standard::authorize_by_resource_type(
            &authorizer.acls.snapshot(),
            &authorizer.config,
            session.requester(),
            operation,
            resource_type,
        ) == Decision::Allowed
    }

    /// Kafka's `authorizedOperations` bit field for the resource: every operation of the type
    /// when no authorizer is configured.
    pub(super) fn authorized_operations(
        &self,
        session: &Session,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        match &self.authorizer {
            None => resource_type
                .supported_operations()
                .iter()
                .fold(0, |bits, operation| bits | (1 << operation.code())),
            Some(authorizer) => standard::authorized_operations(
                &authorizer.acls.snapshot(),
                &authorizer.config,
                session.requester(),
                resource_type,
                name,
            ),
        }
    }
}
