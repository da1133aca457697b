//! Client quotas carried to Kafka by `create-topics`: every entity's quotas kept in ferrolog's
//! `ferrolog-client-quotas` set in Kafka with AlterClientQuotas, as `kafka-configs --alter
//! --add-config` sets them; setting a quota Kafka already holds again is harmless.

use anyhow::bail;
use ferrolog_broker::quotas::Quotas;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse, ApiKey};
use kafka_protocol::protocol::StrBytes;

use crate::kafka_connection::KafkaConnection;

/// Entities set in one request: well within Kafka's 10,000 records a request.
const ENTITIES_PER_REQUEST: usize = 1_000;

/// The client quotas kept in ferrolog's directories (none when none was ever set).
pub(super) fn read(manager: &ferrolog_storage::manager::LogManager) -> anyhow::Result<Quotas> {
    let document = manager
        .documents()
        .read(ferrolog_broker::quotas::QUOTAS_DOCUMENT)?;
    ferrolog_broker::quotas::store::parse(&document.body).map_err(|(line, reason)| {
        let path = document.source.unwrap_or_default();
        anyhow::anyhow!("{}, line {}: {reason}", path.display(), line + 2)
    })
}

/// Sets every entity's quotas in Kafka.
pub(super) fn set_in_kafka(kafka: &mut KafkaConnection, quotas: &Quotas) -> anyhow::Result<()> {
    let entities: Vec<_> = quotas.iter().collect();
    for chunk in entities.chunks(ENTITIES_PER_REQUEST) {
        let entries = chunk
            .iter()
            .map(|(entity, values)| {
                EntryData::default()
                    .with_entity(
                        entity
                            .parts()
                            .into_iter()
                            .map(|(kind, name)| {
                                EntityData::default()
                                    .with_entity_type(StrBytes::from_static_str(kind))
                                    .with_entity_name(
                                        name.wire()
                                            .map(|name| StrBytes::from_string(name.to_owned())),
                                    )
                            })
                            .collect(),
                    )
                    .with_ops(
                        values
                            .iter()
                            .map(|(key, value)| {
                                OpData::default()
                                    .with_key(StrBytes::from_static_str(key.name()))
                                    .with_value(*value)
                            })
                            .collect(),
                    )
            })
            .collect();
        let request = AlterClientQuotasRequest::default().with_entries(entries);
        let altered: AlterClientQuotasResponse =
            kafka.send(ApiKey::AlterClientQuotas, 1, &request)?;
        if let Some(refused) = altered.entries.iter().find(|entry| entry.error_code != 0) {
            let entity: Vec<String> = refused
                .entity
                .iter()
                .map(|part| {
                    let name = part.entity_name.as_deref().unwrap_or("<default>");
                    format!("{}={name}", part.entity_type.as_str())
                })
                .collect();
            bail!(
                "Kafka refused the client quotas of {}: error {}: {}",
                entity.join(","),
                refused.error_code,
                refused.error_message.as_deref().unwrap_or("")
            );
        }
    }
    if !quotas.is_empty() {
        println!(
            "set the client quotas of {} entities in Kafka",
            quotas.len()
        );
    }
    Ok(())
}
