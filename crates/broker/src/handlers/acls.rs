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
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;
use crate::authz::store::{AclChangeError, AclStore, MAX_PER_REQUEST};
use crate::authz::{
    AccessEntry, AclBinding, AclFilter, AclOperation, EntryFilter, PatternFilter, PatternType,
    PatternTypeFilter, Permission, ResourcePattern, ResourceType,
};
use crate::errors::CLUSTER_REFUSED;
use crate::errors::{
    INVALID_REQUEST, NONE, POLICY_VIOLATION, SECURITY_DISABLED, UNKNOWN_SERVER_ERROR,
};
use crate::protocol::Unanswerable;
use crate::refuse::Refuse;

/// Kafka's ANY, in every code set of the ACL APIs.
const ANY: i8 = 1;

pub fn describe(
    context: &Context,
    _asked: &Asked<'_>,
    request: DescribeAclsRequest,
) -> Result<DescribeAclsResponse, Unanswerable> {
    let filter = describe_filter(&request)?;
    let refused = |code, message: &str| {
        Ok(DescribeAclsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message.to_owned()))))
    };
    let acls = match store_for(context) {
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
    _asked: &Asked<'_>,
    request: CreateAclsRequest,
) -> Result<CreateAclsResponse, Unanswerable> {
    let candidates = candidates(&request)?;
    let all_refused = |code, message: &str| all_creations_refused(&candidates, code, message);
    let acls = match store_for(context) {
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
    _asked: &Asked<'_>,
    request: DeleteAclsRequest,
) -> Result<DeleteAclsResponse, Unanswerable> {
    let filters = delete_filters(&request)?;
    let all_refused = |code, message: &str| all_deletions_refused(filters.len(), code, message);
    let acls = match store_for(context) {
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

/// The filter a DescribeAcls request asks with. Parsed before anything else, as Kafka parses
/// it: a request Kafka cannot parse is refused whoever sends it.
fn describe_filter(request: &DescribeAclsRequest) -> Result<AclFilter, Unanswerable> {
    filter_of(
        request.resource_type_filter,
        request.resource_name_filter.as_ref(),
        request.pattern_type_filter,
        request.principal_filter.as_ref(),
        request.host_filter.as_ref(),
        request.operation,
        request.permission_type,
    )
}

/// The ACLs a CreateAcls request asks for, parsed first as [`describe_filter`].
fn candidates(request: &CreateAclsRequest) -> Result<Vec<Candidate>, Unanswerable> {
    request.creations.iter().map(candidate_of).collect()
}

/// The filters a DeleteAcls request asks with, parsed first as [`describe_filter`].
fn delete_filters(request: &DeleteAclsRequest) -> Result<Vec<AclFilter>, Unanswerable> {
    request
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
        .collect()
}

fn all_creations_refused(candidates: &[Candidate], code: i16, message: &str) -> CreateAclsResponse {
    CreateAclsResponse::default().with_results(
        candidates
            .iter()
            .map(|_| failed_creation(code, message))
            .collect(),
    )
}

fn all_deletions_refused(filters: usize, code: i16, message: &str) -> DeleteAclsResponse {
    let refused = DeleteAclsFilterResult::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message.to_owned())));
    DeleteAclsResponse::default().with_filter_results(vec![refused; filters])
}

impl Refuse for DescribeAclsRequest {
    fn precheck(&self, _version: i16) -> Result<(), Unanswerable> {
        describe_filter(self).map(drop)
    }

    fn refused(&self, _version: i16, code: i16) -> DescribeAclsResponse {
        DescribeAclsResponse::default()
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_static_str(CLUSTER_REFUSED)))
    }
}

impl Refuse for CreateAclsRequest {
    fn precheck(&self, _version: i16) -> Result<(), Unanswerable> {
        candidates(self).map(drop)
    }

    fn refused(&self, _version: i16, code: i16) -> CreateAclsResponse {
        // Only their number matters: the precheck parsed them.
        let candidates = candidates(self).unwrap_or_default();
        all_creations_refused(&candidates, code, CLUSTER_REFUSED)
    }
}

impl Refuse for DeleteAclsRequest {
    fn precheck(&self, _version: i16) -> Result<(), Unanswerable> {
        delete_filters(self).map(drop)
    }

    fn refused(&self, _version: i16, code: i16) -> DeleteAclsResponse {
        all_deletions_refused(self.filters.len(), code, CLUSTER_REFUSED)
    }
}

/// The ACLs, when an authorizer is configured; otherwise Kafka's refusal, code and message.
fn store_for(context: &Context) -> Result<&AclStore, (i16, &'static str)> {
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
