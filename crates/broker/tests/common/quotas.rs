//! What the client quota tests share: AlterClientQuotas and DescribeClientQuotas through a
//! client, and a broker whose quota windows are short.

use ferrolog_broker::BrokerConfig;
use ferrolog_broker::quotas::Sampling;
use ferrolog_storage::manager::ManagerConfig;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey, DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Broker, Client};

pub fn text(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// An entry: the entity's (type, name) parts and (key, value) ops, a `None` value removing.
pub fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData::default()
        .with_entity(
            entity
                .iter()
                .map(|(kind, name)| {
                    EntityData::default()
                        .with_entity_type(text(kind))
                        .with_entity_name(name.map(text))
                })
                .collect(),
        )
        .with_ops(
            ops.iter()
                .map(|(key, value)| {
                    OpData::default()
                        .with_key(text(key))
                        .with_value(value.unwrap_or(0.0))
                        .with_remove(value.is_none())
                })
                .collect(),
        )
}

/// Each entry's outcome: its entity as `type=name` parts, and its error code and message.
pub async fn alter(
    client: &mut Client,
    entries: Vec<EntryData>,
    validate_only: bool,
) -> Vec<(String, i16, Option<String>)> {
    let request = AlterClientQuotasRequest::default()
        .with_entries(entries)
        .with_validate_only(validate_only);
    let response: AlterClientQuotasResponse =
        client.send(ApiKey::AlterClientQuotas, 1, &request).await;
    response
        .entries
        .into_iter()
        .map(|entry| {
            let entity: Vec<String> = entry
                .entity
                .iter()
                .map(|part| {
                    let name = part.entity_name.as_deref().unwrap_or("<default>");
                    format!("{}={name}", part.entity_type.as_str())
                })
                .collect();
            let message = entry.error_message.map(|message| message.to_string());
            (entity.join(","), entry.error_code, message)
        })
        .collect()
}

/// The entities a filter lists, each as `type=name` parts then `key=value`s, sorted.
pub async fn describe(
    client: &mut Client,
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> Vec<String> {
    let request = DescribeClientQuotasRequest::default()
        .with_components(
            components
                .iter()
                .map(|(kind, match_type, name)| {
                    ComponentData::default()
                        .with_entity_type(text(kind))
                        .with_match_type(*match_type)
                        .with_match(name.map(text))
                })
                .collect(),
        )
        .with_strict(strict);
    let response: DescribeClientQuotasResponse =
        client.send(ApiKey::DescribeClientQuotas, 1, &request).await;
    assert_eq!(response.error_code, 0, "{:?}", response.error_message);
    let mut listed: Vec<String> = response
        .entries
        .unwrap()
        .iter()
        .map(|entry| {
            let mut parts: Vec<String> = entry
                .entity
                .iter()
                .map(|part| {
                    let name = part.entity_name.as_deref().unwrap_or("<default>");
                    format!("{}={name}", part.entity_type.as_str())
                })
                .collect();
            parts.sort();
            parts.extend(
                entry
                    .values
                    .iter()
                    .map(|value| format!("{}={}", value.key.as_str(), value.value)),
            );
            parts.join(" ")
        })
        .collect();
    listed.sort();
    listed
}

pub const EXACT: i8 = 0;
pub const DEFAULT: i8 = 1;
pub const SPECIFIED: i8 = 2;

/// A broker whose quota rates are measured over two 100 ms windows, so a test sees
/// throttles of a few hundred milliseconds.
pub async fn fast_windows(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        quota_sampling: Sampling {
            samples: 2,
            window_ms: 100,
        },
        controller_quota_sampling: Sampling {
            samples: 2,
            window_ms: 100,
        },
        ..BrokerConfig::default()
    };
    let manager = ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        ..ManagerConfig::default()
    };
    Broker::start_with(manager, config).await
}
