//! CreateAcls, DescribeAcls and DeleteAcls, so `kafka-acls` and the Admin client's ACL calls
//! work: each needs ALTER (create, delete) or DESCRIBE (describe) on the cluster, and without an
//! authorizer each answers SECURITY_DISABLED, as Kafka does.
//!
//! A code Kafka does not define (or UNKNOWN, 0) makes the request one Kafka fails to parse, so
//! the connection is closed; ANY where a stored ACL needs a value fails every creation of the
//! request (UNKNOWN_SERVER_ERROR), as Kafka cannot build that ACL; an empty name, a principal
//! without `:`, or a cluster not named `kafka-cluster` fails its own creation (INVALID_REQUEST),
//! each with Kafka's message. One request creates or removes at most 10,000 ACLs, and the broker
//! keeps at most `ferrolog.max.acls` (POLICY_VIOLATION beyond).

use std::collections::BTreeMap;

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, RequestHeader,
};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::store::{AclChangeError, AclStore, MAX_PER_REQUEST};
use crate::authz::{
    AccessEntry, AclBinding, AclFilter, AclOperation, EntryFilter, PatternFilter, PatternType,
    PatternTypeFilter, Permission, ResourcePattern, ResourceType,
};
use crate::errors::{
    CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST, NONE, POLICY_VIOLATION, SECURITY_DISABLED,
    UNKNOWN_SERVER_ERROR,
};
use crate::protocol::Unanswerable;
use crate::session::Session;

/// Kafka's ANY, in every code set of the ACL APIs.
const ANY: i8 = 1;

pub fn describe(
    context: &Context,
    session: &Session,
    _header: &RequestHeader,
    request: DescribeAclsRequest,
) -> Result<DescribeAclsResponse, Unanswerable> {
    let filter = filter_of(
        request.resource_type_filter,
        request.resource_name_filter.as_ref(),
        request.pattern_type_filter,
        request.principal_filter.as_ref(),
        request.host_filter.as_ref(),
        request.operation,
        request.permission_type,
    )?;
    let refused = |code, message: &str| {
        Ok(DescribeAclsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message.to_owned()))))
    };
    let acls = match store_for(context, session, AclOperation::Describe) {
        Ok(acls) => acls,
        // Kafka words this refusal apart for DescribeAcls.
        Err((SECURITY_DISABLED, _)) => {
            return refused(
                SECURITY_DISABLED,
                "No Authorizer is configured on the broker",
            );
        }
        Err((code, message)) => return refused(code, message),
    };
    let mut by_pattern: BTreeMap<ResourcePattern, Vec<AccessEntry>> = BTreeMap::new();
    for binding in acls.describe(&filter) {
        by_pattern
            .entry(binding.pattern)
            .or_default()
            .push(binding.entry);
    }
    let resources = by_pattern
        .into_iter()
        .map(|(pattern, entries)| {
            DescribeAclsResource::default()
                .with_resource_type(pattern.resource_type.code())
                .with_resource_name(StrBytes::from_string(pattern.name))
                .with_pattern_type(pattern.pattern_type.code())
                .with_acls(
                    entries
                        .into_iter()
                        .map(|entry| {
                            AclDescription::default()
                                .with_principal(StrBytes::from_string(entry.principal))
                                .with_host(StrBytes::from_string(entry.host))
                                .with_operation(entry.operation.code())
                                .with_permission_type(entry.permission.code())
                        })
                        .collect(),
                )
        })
        .collect();
    Ok(DescribeAclsResponse::default()
        .with_error_message(None)
        .with_resources(resources))
}

pub fn create(
    context: &Context,
    session: &Session,
    _header: &RequestHeader,
    request: CreateAclsRequest,
) -> Result<CreateAclsResponse, Unanswerable> {
    // Parsed first: a request Kafka cannot parse is refused whoever sends it.
    let candidates = request
        .creations
        .iter()
        .map(candidate_of)
        .collect::<Result<Vec<_>, _>>()?;
    let all_refused = |code, message: &str| {
        CreateAclsResponse::default().with_results(
            candidates
                .iter()
                .map(|_| failed_creation(code, message))
                .collect(),
        )
    };
    let acls = match store_for(context, session, AclOperation::Alter) {
        Ok(acls) => acls,
        Err((code, message)) => return Ok(all_refused(code, message)),
    };
    // Kafka cannot build an ACL of ANY (or a MATCH pattern): the whole request fails.
    if let Some(message) = candidates.iter().find_map(|candidate| match candidate {
        Candidate::Unbuildable(message) => Some(message),
        _ => None,
    }) {
        return Ok(all_refused(UNKNOWN_SERVER_ERROR, message));
    }
    if candidates.len() > MAX_PER_REQUEST {
        return Ok(all_refused(
            INVALID_REQUEST,
            &format!("a CreateAcls request creates at most {MAX_PER_REQUEST} ACLs"),
        ));
    }
    let valid: Vec<AclBinding> = candidates
        .iter()
        .filter_map(|candidate| match candidate {
            Candidate::Valid(binding) => Some(binding.clone()),
            _ => None,
        })
        .collect();
    let stored = acls.create(&valid);
    if let Err(error) = &stored {
        tracing::warn!(%error, "new ACLs refused");
    }
    let results = candidates
        .iter()
        .map(|candidate| match (candidate, &stored) {
            (Candidate::Invalid(message) | Candidate::Unbuildable(message), _) => {
                failed_creation(INVALID_REQUEST, message)
            }
            (Candidate::Valid(_), Ok(())) => AclCreationResult::default()
                .with_error_code(NONE)
                .with_error_message(None),
            (Candidate::Valid(_), Err(error @ AclChangeError::TooMany { .. })) => {
                failed_creation(POLICY_VIOLATION, &error.to_string())
            }
            (Candidate::Valid(_), Err(error)) => {
                failed_creation(UNKNOWN_SERVER_ERROR, &error.to_string())
            }
        })
        .collect();
    Ok(CreateAclsResponse::default().with_results(results))
}

pub fn delete(
    context: &Context,
    session: &Session,
    _header: &RequestHeader,
    request: DeleteAclsRequest,
) -> Result<DeleteAclsResponse, Unanswerable> {
    let filters = request
        .filters
        .iter()
        .map(|filter: &DeleteAclsFilter| {
            filter_of(
                filter.resource_type_filter,
                filter.resource_name_filter.as_ref(),
                filter.pattern_type_filter,
                filter.principal_filter.as_ref(),
                filter.host_filter.as_ref(),
                filter.operation,
                filter.permission_type,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let all_refused = |code, message: &str| {
        DeleteAclsResponse::default().with_filter_results(
            filters
                .iter()
                .map(|_| {
                    DeleteAclsFilterResult::default()
                        .with_error_code(code)
                        .with_error_message(Some(StrBytes::from_string(message.to_owned())))
                })
                .collect(),
        )
    };
    let acls = match store_for(context, session, AclOperation::Alter) {
        Ok(acls) => acls,
        Err((code, message)) => return Ok(all_refused(code, message)),
    };
    match acls.delete(&filters) {
        Ok(removed) => Ok(DeleteAclsResponse::default().with_filter_results(
            removed
                .into_iter()
                .map(|bindings| match bindings {
                    Some(bindings) => DeleteAclsFilterResult::default()
                        .with_error_message(None)
                        .with_matching_acls(bindings.into_iter().map(matching_acl).collect()),
                    None => DeleteAclsFilterResult::default()
                        .with_error_code(INVALID_REQUEST)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "a DeleteAcls request removes at most {MAX_PER_REQUEST} ACLs"
                        )))),
                })
                .collect(),
        )),
        Err(error) => {
            tracing::error!(%error, "could not store the ACLs left after a deletion");
            Ok(all_refused(UNKNOWN_SERVER_ERROR, &error.to_string()))
        }
    }
}

/// The ACLs, when the session may do `operation` on the cluster and an authorizer is
/// configured; otherwise the refusal, with Kafka's code and message, in Kafka's order.
fn store_for<'a>(
    context: &'a Context,
    session: &Session,
    operation: AclOperation,
) -> Result<&'a AclStore, (i16, &'static str)> {
    if !context.access.allows_on_cluster(session, operation) {
        return Err((
            CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ));
    }
    context
        .access
        .acls()
        .ok_or((SECURITY_DISABLED, "No Authorizer is configured."))
}

fn failed_creation(code: i16, message: &str) -> AclCreationResult {
    AclCreationResult::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message.to_owned())))
}

fn matching_acl(binding: AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl::default()
        .with_error_message(None)
        .with_resource_type(binding.pattern.resource_type.code())
        .with_resource_name(StrBytes::from_string(binding.pattern.name))
        .with_pattern_type(binding.pattern.pattern_type.code())
        .with_principal(StrBytes::from_string(binding.entry.principal))
        .with_host(StrBytes::from_string(binding.entry.host))
        .with_operation(binding.entry.operation.code())
        .with_permission_type(binding.entry.permission.code())
}

/// A code of one of Kafka's ACL code sets: a value, ANY, or one Kafka cannot parse.
fn decoded<T>(
    code: i8,
    from_code: impl Fn(i8) -> Option<T>,
    what: &str,
) -> Result<Option<T>, Unanswerable> {
    match from_code(code) {
        Some(value) => Ok(Some(value)),
        None if code == ANY => Ok(None),
        None => Err(Unanswerable::Malformed(format!(
            "{what} code {code} is not one Kafka defines"
        ))),
    }
}

/// What a creation asks for, as Kafka judges it.
enum Candidate {
    /// An ACL to store.
    Valid(AclBinding),
    /// Refused on its own (INVALID_REQUEST), with Kafka's message.
    Invalid(String),
    /// ANY, or a MATCH pattern, where an ACL needs a value: Kafka cannot build the ACL and
    /// fails the whole request (UNKNOWN_SERVER_ERROR), with this message.
    Unbuildable(String),
}

/// Judges one creation; `Err` when Kafka could not parse the request at all.
fn candidate_of(creation: &AclCreation) -> Result<Candidate, Unanswerable> {
    let resource_type = decoded(
        creation.resource_type,
        ResourceType::from_code,
        "resource type",
    )?;
    let pattern_type =
        PatternTypeFilter::from_code(creation.resource_pattern_type).ok_or_else(|| {
            Unanswerable::Malformed(format!(
                "pattern type code {} is not one Kafka defines",
                creation.resource_pattern_type
            ))
        })?;
    let operation = decoded(creation.operation, AclOperation::from_code, "operation")?;
    let permission = decoded(
        creation.permission_type,
        Permission::from_code,
        "permission",
    )?;
    // In the order Kafka's constructors check them.
    let unbuildable = |message: &str| Ok(Candidate::Unbuildable(message.to_owned()));
    let Some(resource_type) = resource_type else {
        return unbuildable("resourceType must not be ANY");
    };
    let pattern_type: PatternType = match pattern_type {
        PatternTypeFilter::Exactly(pattern_type) => pattern_type,
        PatternTypeFilter::Any => return unbuildable("patternType must not be ANY"),
        PatternTypeFilter::Match => return unbuildable("patternType must not be MATCH"),
    };
    let Some(operation) = operation else {
        return unbuildable("operation must not be ANY");
    };
    let Some(permission) = permission else {
        return unbuildable("permissionType must not be ANY");
    };
    let binding = AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: creation.resource_name.to_string(),
            pattern_type,
        },
        entry: AccessEntry {
            principal: creation.principal.to_string(),
            host: creation.host.to_string(),
            operation,
            permission,
        },
    };
    Ok(match binding.validate() {
        Ok(()) => Candidate::Valid(binding),
        Err(message) => Candidate::Invalid(message),
    })
}

fn filter_of(
    resource_type: i8,
    name: Option<&StrBytes>,
    pattern_type: i8,
    principal: Option<&StrBytes>,
    host: Option<&StrBytes>,
    operation: i8,
    permission: i8,
) -> Result<AclFilter, Unanswerable> {
    Ok(AclFilter {
        pattern: PatternFilter {
            resource_type: decoded(resource_type, ResourceType::from_code, "resource type")?,
            name: name.map(ToString::to_string),
            pattern_type: PatternTypeFilter::from_code(pattern_type).ok_or_else(|| {
                Unanswerable::Malformed(format!(
                    "pattern type code {pattern_type} is not one Kafka defines"
                ))
            })?,
        },
        entry: EntryFilter {
            principal: principal.map(ToString::to_string),
            host: host.map(ToString::to_string),
            operation: decoded(operation, AclOperation::from_code, "operation")?,
            permission: decoded(permission, Permission::from_code, "permission")?,
        },
    })
}

/// The requests the authorization tests probe these APIs with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
    use kafka_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};

    use crate::probes::{Probed, creation, match_any_acl, text};

    impl Probed for DescribeAclsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            (3, match_any_acl())
        }
    }

    impl Probed for CreateAclsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request =
                CreateAclsRequest::default().with_creations(vec![creation(2, "x", 3, "*", 3, 3)]);
            (3, request)
        }
    }

    impl Probed for DeleteAclsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = DeleteAclsRequest::default().with_filters(vec![
                DeleteAclsFilter::default()
                    .with_principal_filter(None)
                    .with_host_filter(None)
                    .with_resource_type_filter(2)
                    .with_resource_name_filter(Some(text("x")))
                    .with_pattern_type_filter(3)
                    .with_operation(1)
                    .with_permission_type(1),
            ]);
            (3, request)
        }
    }
}
