//! DescribeClientQuotas: ferrolog enforces no client quotas, so a valid filter matches none and
//! the answer lists no entries, as Kafka's does where no quota is set. The filter is checked as
//! Kafka checks it, with its codes and messages; it needs DESCRIBE_CONFIGS on the cluster.
//! (`kafka-configs --describe --entity-type users` asks for quotas before SCRAM credentials.)

use std::collections::HashSet;

use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;
use crate::errors::{INVALID_REQUEST, UNSUPPORTED_VERSION};

const ENTITY_TYPES: [&str; 3] = ["user", "client-id", "ip"];

pub fn describe(
    _context: &Context,
    _asked: &Asked<'_>,
    request: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    match check_filter(&request) {
        Ok(()) => DescribeClientQuotasResponse::default().with_entries(Some(Vec::new())),
        Err((code, message)) => refused(code, Some(message)),
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
}
