//! The decision itself, with the semantics of Kafka's `StandardAuthorizer`: a pure function of
//! the ACLs, the configuration and the request's principal, host, operation and resource.
//!
//! * A super user (`super.users`) may do everything.
//! * The ACLs that apply to a resource are those of its type whose pattern matches its name:
//!   the literal name, every prefix of it, and the literal wildcard `*`.
//! * Of those, an ACL counts for a request when its principal is the request's or `User:*`, and
//!   its host is the client's IP address or `*`.
//! * A counting DENY for the operation (or for ALL) denies, whatever allows it. Otherwise a
//!   counting ALLOW for the operation allows; an ALLOW of READ, WRITE, DELETE or ALTER also
//!   allows DESCRIBE, and an ALLOW of ALTER_CONFIGS allows DESCRIBE_CONFIGS. A DENY implies
//!   nothing beyond its own operation.
//! * When no ACL at all applies to the resource (for any principal, host or operation),
//!   `allow.everyone.if.no.acl.found` decides; when some apply but none allows, it is denied.

use std::collections::BTreeSet;

use super::acl::{
    ANY_USER, AclBinding, AclOperation, PatternType, Permission, ResourceType, WILDCARD,
};
use super::index::AclIndex;

/// `super.users` and `allow.everyone.if.no.acl.found`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// Principals (`Type:name`) allowed everything.
    pub super_users: BTreeSet<String>,
    /// Whether a resource no ACL applies to is open to everyone. Default false.
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Parses Kafka's values: `super.users` is a `;`-separated list of `Type:name` principals,
    /// `allow.everyone.if.no.acl.found` is `true` or `false`. The error names the key.
    pub fn parse(super_users: Option<&str>, allow_everyone: Option<&str>) -> Result<Self, String> {
        let mut config = Self::default();
        for entry in super_users.unwrap_or_default().split(';').map(str::trim) {
            if entry.is_empty() {
                continue;
            }
            if !entry
                .split_once(':')
                .is_some_and(|(kind, name)| !kind.is_empty() && !name.is_empty())
            {
                return Err(format!(
                    "super.users: {entry:?} is not a principal of the form Type:name"
                ));
            }
            config.super_users.insert(entry.to_owned());
        }
        if let Some(value) = allow_everyone {
            config.allow_everyone_if_no_acl_found = match value.trim() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(format!(
                        "allow.everyone.if.no.acl.found: {value:?} is not true or false"
                    ));
                }
            };
        }
        Ok(config)
    }
}

/// Who is asking: the connection's principal and the client's IP address as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Requester<'a> {
    /// `Type:name`, e.g. `User:alice`, or `User:ANONYMOUS` on a listener without
    /// authentication.
    pub principal: &'a str,
    /// The client's IP address, as ACL hosts are written (`127.0.0.1`).
    pub host: &'a str,
}

/// Whether a request may go ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// It may.
    Allowed,
    /// It may not.
    Denied,
}

/// Whether an ACL with `granted` covers the `requested` operation when it allows: the same
/// operation, ALL, or one that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE;
/// ALTER_CONFIGS implies DESCRIBE_CONFIGS).
pub fn allow_covers(granted: AclOperation, requested: AclOperation) -> bool {
    use AclOperation::*;
    granted == All
        || granted == requested
        || (requested == Describe && matches!(granted, Read | Write | Delete | Alter))
        || (requested == DescribeConfigs && granted == AlterConfigs)
}

/// Whether an ACL with `denied` covers the `requested` operation when it denies.
fn deny_covers(denied: AclOperation, requested: AclOperation) -> bool {
    denied == AclOperation::All || denied == requested
}

fn counts_for(binding: &AclBinding, who: Requester<'_>) -> bool {
    (binding.entry.principal == who.principal || binding.entry.principal == ANY_USER)
        && (binding.entry.host == WILDCARD || binding.entry.host == who.host)
}

/// The decision on `operation` over the resource `resource_type`:`name`.
pub fn authorize(
    acls: &AclIndex,
    config: &AuthorizerConfig,
    who: Requester<'_>,
    operation: AclOperation,
    resource_type: ResourceType,
    name: &str,
) -> Decision {
    if config.super_users.contains(who.principal) {
        return Decision::Allowed;
    }
    let mut any_acl_applies = false;
    let mut allowed = false;
    for binding in acls.applicable(resource_type, name) {
        any_acl_applies = true;
        if !counts_for(binding, who) {
            continue;
        }
        match binding.entry.permission {
            Permission::Deny if deny_covers(binding.entry.operation, operation) => {
                return Decision::Denied;
            }
            Permission::Allow if allow_covers(binding.entry.operation, operation) => {
                allowed = true;
            }
            _ => {}
        }
    }
    if allowed || (!any_acl_applies && config.allow_everyone_if_no_acl_found) {
        Decision::Allowed
    } else {
        Decision::Denied
    }
}

/// Kafka's `authorizedOperations` field: bit `1 << code` set for each operation of the type
/// that would be allowed on the resource.
pub fn authorized_operations(
    acls: &AclIndex,
    config: &AuthorizerConfig,
    who: Requester<'_>,
    resource_type: ResourceType,
    name: &str,
) -> i32 {
    resource_type
        .supported_operations()
        .iter()
        .filter(|operation| {
            authorize(acls, config, who, **operation, resource_type, name) == Decision::Allowed
        })
        .fold(0, |bits, operation| bits | (1 << operation.code()))
}

/// Whether `operation` is allowed on at least one resource of the type (Kafka's
/// `authorizeByResourceType`, which an idempotent producer without IDEMPOTENT_WRITE on the
/// cluster needs for WRITE on topics). Only exact operations and ALL count here, no implied ones.
pub fn authorize_by_resource_type(
    acls: &AclIndex,
    config: &AuthorizerConfig,
    who: Requester<'_>,
    operation: AclOperation,
    resource_type: ResourceType,
) -> Decision {
    // Kafka asks first about a made-up name: super users, and the no-ACL default when no ACL
    // applies to that name, pass here.
    if authorize(acls, config, who, operation, resource_type, "hardcode") == Decision::Allowed {
        return Decision::Allowed;
    }
    let counting: Vec<&AclBinding> = acls
        .of_type(resource_type)
        .filter(|binding| {
            counts_for(binding, who) && deny_covers(binding.entry.operation, operation)
        })
        .collect();
    let with = |permission: Permission, pattern_type: PatternType| {
        counting
            .iter()
            .filter(move |binding| {
                binding.entry.permission == permission
                    && binding.pattern.pattern_type == pattern_type
            })
            .map(|binding| binding.pattern.name.as_str())
    };
    let literal_wildcard =
        |permission| with(permission, PatternType::Literal).any(|name| name == WILDCARD);
    if literal_wildcard(Permission::Deny) {
        return Decision::Denied;
    }
    if literal_wildcard(Permission::Allow) {
        return Decision::Allowed;
    }
    let denied_prefixes: Vec<&str> = with(Permission::Deny, PatternType::Prefixed).collect();
    let denied_literals: BTreeSet<&str> = with(Permission::Deny, PatternType::Literal).collect();
    let under_denied_prefix = |name: &str| {
        denied_prefixes
            .iter()
            .any(|prefix| name.starts_with(prefix))
    };
    let some_literal = with(Permission::Allow, PatternType::Literal)
        .any(|name| !denied_literals.contains(name) && !under_denied_prefix(name));
    let some_prefix =
        with(Permission::Allow, PatternType::Prefixed).any(|name| !under_denied_prefix(name));
    if some_literal || some_prefix {
        Decision::Allowed
    } else {
        Decision::Denied
    }
}
