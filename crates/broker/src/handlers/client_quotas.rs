//! DescribeClientQuotas and AlterClientQuotas: the client quotas in force
//! ([`crate::quotas`]), listed through a filter checked as Kafka checks it, with its codes and
//! messages (DESCRIBE_CONFIGS on the cluster), and changed entry by entry as Kafka's controller
//! changes them (ALTER_CONFIGS on the cluster): each entry that passes its checks is applied,
//! all of them stored together, and each entity answered with its own outcome.
//! (`kafka-configs --describe --entity-type users` asks for quotas before SCRAM credentials.)

use std::collections::HashSet;

use kafka_protocol::messages::alter_client_quotas_response::{
    EntityData as AlteredEntity, EntryData as AlteredEntry,
};
use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;
use crate::errors::{INVALID_REQUEST, UNSUPPORTED_VERSION};
use crate::quotas::{Alteration, Filter, Match, QuotaEntity, QuotaValues, RawEntity};

const ENTITY_TYPES: [&str; 3] = ["user", "client-id", "ip"];

pub fn describe(
    context: &Context,
    _asked: &Asked<'_>,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    if let Err((code, message)) = check_filter(&request) {
        return refused(code, Some(message));
    }
    let filter = Filter {
        components: request
            .components
            .iter()
            .map(|component| {
                let wanted = match (component.match_type, &component._match) {
                    (0, Some(name)) => Match::Exact(name.to_string()),
                    (1, _) => Match::Default,
                    _ => Match::Specified,
                };
                (component.entity_type.to_string(), wanted)
            })
            .collect(),
        strict: request.strict,
    };
    let state = context.quotas.store().snapshot();
    let entries = state
        .quotas
        .iter()
        .filter(|(entity, _)| filter.matches(entity))
        .map(|(entity, values)| described(entity, values))
        .collect();
    DescribeClientQuotasResponse::default().with_entries(Some(entries))
}

/// The entity's parts in the order Kafka's map of them iterates: a client id before a user.
fn kafka_order(entity: &QuotaEntity) -> Vec<(&'static str, Option<&str>)> {
    let mut parts: Vec<(&'static str, Option<&str>)> = entity
        .parts()
        .into_iter()
        .map(|(kind, name)| (kind, name.wire()))
        .collect();
    parts.sort_by_key(|(kind, _)| match *kind {
        "client-id" => 0,
        "user" => 1,
        _ => 2,
    });
    parts
}

fn described(entity: &QuotaEntity, values: &QuotaValues) -> EntryData {
    EntryData::default()
        .with_entity(
            kafka_order(entity)
                .into_iter()
                .map(|(kind, name)| {
                    EntityData::default()
                        .with_entity_type(StrBytes::from_static_str(kind))
                        .with_entity_name(name.map(|name| StrBytes::from_string(name.to_owned())))
                })
                .collect(),
        )
        .with_values(
            values
                .iter()
                .map(|(key, value)| {
                    ValueData::default()
                        .with_key(StrBytes::from_static_str(key.name()))
                        .with_value(*value)
                })
                .collect(),
        )
}

pub fn alter(
    context: &Context,
    _asked: &Asked<'_>,
    request: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    let alterations = request
        .entries
        .iter()
        .map(|entry| Alteration {
            entity: entity_of(entry),
            ops: entry
                .ops
                .iter()
                .map(|op| (op.key.to_string(), (!op.remove).then_some(op.value)))
                .collect(),
        })
        .collect();
    let outcomes = match context
        .quotas
        .store()
        .alter(alterations, request.validate_only)
    {
        Ok(outcomes) => outcomes,
        Err(error) => {
            tracing::warn!(%error, "client quotas not changed: they could not be stored");
            let code = crate::errors::code_of(&error);
            return AlterClientQuotasRequest::refused_all(&request, code, Some(error.to_string()));
        }
    };
    let entries = outcomes
        .into_iter()
        .map(|(entity, outcome)| {
            let (code, message) = match outcome {
                Ok(()) => (crate::errors::NONE, None),
                Err(refused) => (refused.code, Some(StrBytes::from_string(refused.message))),
            };
            AlteredEntry::default()
                .with_error_code(code)
                .with_error_message(message)
                .with_entity(altered_entity(&entity))
        })
        .collect();
    AlterClientQuotasResponse::default().with_entries(entries)
}

fn altered_entity(entity: &RawEntity) -> Vec<AlteredEntity> {
    let mut parts: Vec<(&String, &Option<String>)> = entity.iter().collect();
    parts.sort_by_key(|(kind, _)| match kind.as_str() {
        "client-id" => 0,
        "user" => 1,
        "ip" => 2,
        _ => 3,
    });
    parts
        .into_iter()
        .map(|(kind, name)| {
            AlteredEntity::default()
                .with_entity_type(StrBytes::from_string(kind.clone()))
                .with_entity_name(name.clone().map(StrBytes::from_string))
        })
        .collect()
}

/// The entity an entry of the request names, its (type, name) pairs read as Kafka reads them.
fn entity_of(
    entry: &kafka_protocol::messages::alter_client_quotas_request::EntryData,
) -> RawEntity {
    let parts: Vec<(String, Option<String>)> = entry
        .entity
        .iter()
        .map(|part| {
            let name = part.entity_name.as_ref().map(ToString::to_string);
            (part.entity_type.to_string(), name)
        })
        .collect();
    crate::quotas::validate::raw_entity(&parts)
}

trait RefusedAll {
    fn refused_all(&self, code: i16, message: Option<String>) -> AlterClientQuotasResponse;
}

impl RefusedAll for AlterClientQuotasRequest {
    /// Every entry answered with `code`, as Kafka answers a request refused as a whole.
    fn refused_all(&self, code: i16, message: Option<String>) -> AlterClientQuotasResponse {
        let entries = self
            .entries
            .iter()
            .map(|entry| {
                AlteredEntry::default()
                    .with_error_code(code)
                    .with_error_message(message.clone().map(StrBytes::from_string))
                    .with_entity(altered_entity(&entity_of(entry)))
            })
            .collect();
        AlterClientQuotasResponse::default().with_entries(entries)
    }
}

fn refused(code: i16, message: Option<String>) -> DescribeClientQuotasResponse {
    DescribeClientQuotasResponse::default()
        .with_error_code(code)
        .with_error_message(message.map(StrBytes::from_string))
        .with_entries(None)
}

/// Kafka's checks of a filter, in its order.
fn check_filter(request: &DescribeClientQuotasRequest) -> Result<(), (i16, String)> {
    let mut seen = HashSet::new();
    for component in &request.components {
        let entity = component.entity_type.as_str();
        if entity.is_empty() {
            return Err((INVALID_REQUEST, "Invalid empty entity type.".into()));
        }
        if !seen.insert(entity.to_owned()) {
            return Err((
                INVALID_REQUEST,
                format!("Entity type {entity} cannot appear more than once in the filter."),
            ));
        }
        if !ENTITY_TYPES.contains(&entity) {
            return Err((
                UNSUPPORTED_VERSION,
                format!("Unsupported entity type {entity}"),
            ));
        }
        let refusal = match (component.match_type, component._match.is_some()) {
            (0, false) => "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            (1, true) => "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            (2, true) => {
                "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
            }
            (0..=2, _) => continue,
            (other, _) => return Err((INVALID_REQUEST, format!("Unknown match type {other}"))),
        };
        return Err((INVALID_REQUEST, refusal.into()));
    }
    if seen.contains("ip") && (seen.contains("user") || seen.contains("client-id")) {
        return Err((
            INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.".into(),
        ));
    }
    Ok(())
}

impl crate::refuse::Refuse for AlterClientQuotasRequest {
    /// Every entry refused with `code` and its default text, as Kafka answers.
    fn refused(&self, _version: i16, code: i16) -> AlterClientQuotasResponse {
        let message = (code == crate::errors::CLUSTER_AUTHORIZATION_FAILED)
            .then(|| crate::errors::CLUSTER_REFUSED.to_owned());
        self.refused_all(code, message)
    }
}

impl crate::refuse::Refuse for DescribeClientQuotasRequest {
    fn refused(&self, _version: i16, code: i16) -> DescribeClientQuotasResponse {
        refused(code, None)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::DescribeClientQuotasRequest;
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;

    use crate::probes::{Probed, text};

    impl Probed for DescribeClientQuotasRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeClientQuotasRequest::default().with_components(vec![
                ComponentData::default()
                    .with_entity_type(text("user"))
                    .with_match_type(0)
                    .with_match(Some(text("probe-user"))),
            ]);
            (1, request)
        }
    }

    impl Probed for kafka_protocol::messages::AlterClientQuotasRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            use kafka_protocol::messages::alter_client_quotas_request::{
                EntityData, EntryData, OpData,
            };
            let entry = EntryData::default()
                .with_entity(vec![
                    EntityData::default()
                        .with_entity_type(text("user"))
                        .with_entity_name(Some(text("probe-user"))),
                ])
                .with_ops(vec![
                    OpData::default()
                        .with_key(text("producer_byte_rate"))
                        .with_value(1024.0),
                ]);
            let request = Self::default()
                .with_entries(vec![entry])
                .with_validate_only(true);
            (1, request)
        }
    }
}
