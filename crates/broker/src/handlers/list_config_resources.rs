//! ListConfigResources (KIP-1142; version 0, ListClientMetricsResources, listed client-metrics
//! subscriptions only): the resources configs can be set on, of the types asked for (none
//! asked: every type the version knows), in Kafka's order: the groups with configs of their
//! own, the client-metrics subscriptions, this broker's loggers
//! and this broker (by node id), then every topic, internal ones included. A type the version
//! does not know is answered `UNSUPPORTED_VERSION` with nothing listed. Needs
//! DESCRIBE_CONFIGS on the cluster.

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::{Context, errors};

/// Kafka's config resource types.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let known: &[i8] = if asked.version() == 0 {
        &[CLIENT_METRICS]
    } else {
        &[TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP]
    };
    let wanted: Vec<i8> = if request.resource_types.is_empty() {
        known.to_vec()
    } else {
        request.resource_types.clone()
    };
    if wanted.iter().any(|kind| !known.contains(kind)) {
        return ListConfigResourcesResponse::default().with_error_code(errors::UNSUPPORTED_VERSION);
    }
    let mut listed = Vec::new();
    let mut list = |kind: i8, names: Vec<String>| {
        if wanted.contains(&kind) {
            listed.extend(names.into_iter().map(|name| {
                ConfigResource::default()
                    .with_resource_name(StrBytes::from_string(name))
                    .with_resource_type(kind)
            }));
        }
    };
    list(
        GROUP,
        context.groups.group_configs().all().into_keys().collect(),
    );
    list(CLIENT_METRICS, context.telemetry.names());
    let node = context.manager.node_id().to_string();
    list(BROKER_LOGGER, vec![node.clone()]);
    list(BROKER, vec![node]);
    let mut topics: Vec<String> = context
        .manager
        .topics()
        .into_iter()
        .map(|(topic, _)| topic)
        .collect();
    topics.sort();
    list(TOPIC, topics);
    ListConfigResourcesResponse::default().with_config_resources(listed)
}

impl crate::refuse::Refuse for ListConfigResourcesRequest {
    /// Nothing listed.
    fn refused(&self, _version: i16, code: i16) -> ListConfigResourcesResponse {
        ListConfigResourcesResponse::default().with_error_code(code)
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::ListConfigResourcesRequest;

    use crate::probes::Probed;

    impl Probed for ListConfigResourcesRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            (1, ListConfigResourcesRequest::default())
        }
    }
}
