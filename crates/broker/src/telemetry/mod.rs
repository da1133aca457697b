//! Client telemetry (KIP-714): clients ask which of their metrics to push
//! (GetTelemetrySubscriptions) and push them (PushTelemetry), and the Prometheus endpoint shows
//! what they pushed. Kafka hands pushed metrics to a plugin, and without one keeps nothing;
//! ferrolog shows them itself, so it lists both APIs in ApiVersions.
//!
//! The subscriptions are Kafka's client-metrics config resources, changed with
//! IncrementalAlterConfigs or AlterConfigs (`kafka-client-metrics`) and kept in the document
//! `ferrolog-client-metrics` (a table of values by subscription name), written before a change
//! is in force. Every change moves the subscriptions' generation on, and each client is told
//! anew at its next request.

pub mod exposition;
pub mod instances;
pub mod otlp;
pub mod subscriptions;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use ferrolog_records::compression::Compression;
use ferrolog_storage::StorageError;
use ferrolog_storage::manager::{LogManager, Table, parse_table, render_table};
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use crate::errors;
use crate::stored::{Rollback, StoredDocument};
use instances::{Admitted, ClientInstances, Limits, Push, Subscribed};
use subscriptions::{ClientAttributes, Resolved, Subscription, Values};

/// The document the subscriptions are kept in.
pub const CLIENT_METRICS_DOCUMENT: &str = "ferrolog-client-metrics";
/// The longest value Kafka stores.
const MAX_VALUE_BYTES: usize = 32_767;
/// The longest subscription name: the document holds every name.
pub const MAX_NAME_BYTES: usize = 249;

/// The telemetry settings.
#[derive(Debug, Clone, Copy)]
pub struct TelemetryConfig {
    /// `telemetry.max.bytes` (Kafka's, 1 MiB), the cache of client instances (Kafka's,
    /// 16,384) and `ferrolog.telemetry.max.retained.bytes` (64 MiB).
    pub limits: Limits,
    /// `ferrolog.max.client.metrics.subscriptions`: the most subscriptions kept (1,000; Kafka:
    /// unlimited).
    pub max_subscriptions: usize,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            limits: Limits {
                max_instances: 16_384,
                max_push_bytes: 1 << 20,
                max_retained_bytes: 64 << 20,
            },
            max_subscriptions: 1000,
        }
    }
}

/// One change to a subscription, as IncrementalAlterConfigs or AlterConfigs asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alteration {
    /// (key, operation: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT, value).
    Incremental(Vec<(String, i8, Option<String>)>),
    /// The subscription's whole set becomes this.
    Replace(Values),
}

#[derive(Debug, Default)]
struct Subscriptions {
    /// Moves on at every change, so that clients are told anew.
    generation: u64,
    by_name: BTreeMap<String, (Values, Subscription)>,
    /// Every subscription, as requests resolve them, shared rather than copied per request.
    checked: Arc<Vec<Subscription>>,
}

impl Subscriptions {
    fn new(generation: u64, by_name: BTreeMap<String, (Values, Subscription)>) -> Self {
        let checked = Arc::new(
            by_name
                .values()
                .map(|(_, subscription)| subscription.clone())
                .collect(),
        );
        Self {
            generation,
            by_name,
            checked,
        }
    }
}

/// The subscriptions and the client instances; the one owner of both.
#[derive(Debug)]
pub struct Telemetry {
    config: TelemetryConfig,
    document: StoredDocument,
    subscriptions: RwLock<Subscriptions>,
    instances: Mutex<ClientInstances>,
}

impl Telemetry {
    /// Loads the subscriptions; a stored one Kafka's rules refuse stops startup, naming it.
    pub fn open(
        manager: Arc<LogManager>,
        config: TelemetryConfig,
        rollback: Rollback,
    ) -> Result<Self, StorageError> {
        // The stored document counts lines from 1.
        let parse = |body: &str| parse_table(body).map_err(|(line, reason)| (line + 1, reason));
        let (document, table) =
            StoredDocument::open(manager, CLIENT_METRICS_DOCUMENT, parse, rollback)?;
        let mut by_name = BTreeMap::new();
        for (name, values) in table {
            let subscription = subscriptions::validate(&name, &values).map_err(|(_, reason)| {
                StorageError::Fatal(format!(
                    "{CLIENT_METRICS_DOCUMENT}: subscription {name:?}: {reason}"
                ))
            })?;
            by_name.insert(name, (values, subscription));
        }
        Ok(Self {
            config,
            document,
            subscriptions: RwLock::new(Subscriptions::new(1, by_name)),
            instances: Mutex::new(ClientInstances::new(config.limits)),
        })
    }

    /// The subscriptions' names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.subscriptions.read().by_name.keys().cloned().collect()
    }

    /// The values subscription `name` sets (empty when it does not exist).
    pub fn values(&self, name: &str) -> Values {
        self.subscriptions
            .read()
            .by_name
            .get(name)
            .map(|(values, _)| values.clone())
            .unwrap_or_default()
    }

    /// Checks `alteration` against the subscription's whole resulting set and, unless
    /// `validate_only`, stores it and puts it in force. Deleting every key deletes the
    /// subscription. The refusal is Kafka's error code and message.
    pub fn alter(
        &self,
        name: &str,
        alteration: Alteration,
        validate_only: bool,
    ) -> Result<(), (i16, String)> {
        let mut change = self.document.change();
        let current = self.values(name);
        let next = match alteration {
            Alteration::Incremental(changes) => incremental(current.clone(), changes)?,
            Alteration::Replace(next) => next,
        };
        if next.values().any(|value| value.len() > MAX_VALUE_BYTES) {
            return Err((
                errors::INVALID_CONFIG,
                format!(
                    "The configuration value cannot be added because it exceeds the maximum value size of {MAX_VALUE_BYTES} bytes."
                ),
            ));
        }
        let subscription = subscriptions::validate(name, &next)?;
        let next = subscriptions::normalized(&next);
        let mut table: Table = self
            .subscriptions
            .read()
            .by_name
            .iter()
            .map(|(name, (values, _))| (name.clone(), values.clone()))
            .collect();
        if current.is_empty() && !next.is_empty() {
            self.check_room(name, table.len())?;
        }
        if validate_only || next == current {
            return Ok(());
        }
        if next.is_empty() {
            table.remove(name);
        } else {
            table.insert(name.to_owned(), next.clone());
        }
        change.store(render_table(&table)).map_err(|error| {
            (
                errors::KAFKA_STORAGE_ERROR,
                format!("the client metrics subscription could not be stored: {error}"),
            )
        })?;
        let mut subscriptions = self.subscriptions.write();
        let mut by_name = std::mem::take(&mut subscriptions.by_name);
        if next.is_empty() {
            by_name.remove(name);
        } else {
            by_name.insert(name.to_owned(), (next, subscription));
        }
        *subscriptions = Subscriptions::new(subscriptions.generation + 1, by_name);
        Ok(())
    }

    fn check_room(&self, name: &str, count: usize) -> Result<(), (i16, String)> {
        if name.len() > MAX_NAME_BYTES {
            return Err((
                errors::POLICY_VIOLATION,
                format!(
                    "a client metrics subscription name may have at most {MAX_NAME_BYTES} bytes"
                ),
            ));
        }
        let max = self.config.max_subscriptions;
        if count >= max {
            return Err((
                errors::POLICY_VIOLATION,
                format!(
                    "{max} client metrics subscriptions exist already (ferrolog.max.client.metrics.subscriptions)"
                ),
            ));
        }
        Ok(())
    }

    /// What a client is asked for now, under the subscriptions' generation.
    fn resolver(&self) -> (u64, impl Fn(&ClientAttributes) -> Resolved + '_) {
        let subscriptions = self.subscriptions.read();
        let (generation, all) = (subscriptions.generation, Arc::clone(&subscriptions.checked));
        drop(subscriptions);
        (generation, move |client: &ClientAttributes| {
            subscriptions::resolve(all.iter(), client)
        })
    }

    /// GetTelemetrySubscriptions of instance `id` (nil: a new one), whose attributes
    /// `attributes` gives once its id is known.
    pub fn get_subscriptions(
        &self,
        now: Instant,
        id: Uuid,
        attributes: impl FnOnce(Uuid) -> ClientAttributes,
    ) -> Result<Subscribed, i16> {
        let (generation, resolve) = self.resolver();
        self.instances
            .lock()
            .get_subscriptions(now, id, attributes, (generation, &resolve))
    }

    /// PushTelemetry: the push's checks in Kafka's order, then its payload decompressed (at
    /// most `telemetry.max.bytes`) and read, outside the instances' lock, keeping only the
    /// metrics the client was asked for. Answers the error code.
    pub fn push(
        &self,
        now: Instant,
        push: Push,
        (compression, payload): (i8, &[u8]),
        attributes: impl FnOnce(Uuid) -> ClientAttributes,
    ) -> i16 {
        let (generation, resolve) = self.resolver();
        let admitted =
            self.instances
                .lock()
                .admit_push(now, push, attributes, (generation, &resolve));
        let admitted = match admitted {
            Ok(admitted) => admitted,
            Err(code) => return code,
        };
        let read = self.read_payload((compression, payload), &admitted);
        self.instances.lock().complete_push(admitted.instance, read)
    }

    /// A push's points: its codec known, its size within `telemetry.max.bytes`, compressed and
    /// decompressed, its metrics within what the other instances leave.
    fn read_payload(
        &self,
        (compression, payload): (i8, &[u8]),
        admitted: &Admitted,
    ) -> Result<Vec<otlp::Point>, i16> {
        let max_bytes = self.config.limits.max_push_bytes;
        let codec = u8::try_from(compression)
            .ok()
            .and_then(|id| Compression::from_id(id).ok())
            .ok_or(errors::UNSUPPORTED_COMPRESSION_TYPE)?;
        if payload.len() > max_bytes {
            return Err(errors::TELEMETRY_TOO_LARGE);
        }
        if payload.is_empty() {
            return Ok(Vec::new());
        }
        let plain = codec
            .decompress(payload, max_bytes)
            .map_err(|_| errors::INVALID_RECORD)?;
        otlp::decode(&plain, &admitted.metrics, admitted.budget).map_err(|unread| match unread {
            otlp::Unread::NotMetrics => errors::INVALID_RECORD,
            otlp::Unread::TooLarge => errors::THROTTLING_QUOTA_EXCEEDED,
        })
    }

    /// The pushed series in Prometheus' text format, after forgetting the silent instances.
    pub fn render(&self, now: Instant) -> String {
        let mut exposition = exposition::Exposition::default();
        let mut instances = self.instances.lock();
        instances.for_each_series(now, |name, kind, labels, value| {
            exposition.add(name, kind, labels, value);
        });
        let retained = instances.retained_bytes();
        drop(instances);
        let mut text = exposition.render();
        text.push_str(&format!(
            "# TYPE ferrolog_telemetry_retained_bytes gauge\nferrolog_telemetry_retained_bytes {retained}\n"
        ));
        text
    }
}

/// A subscription's values after IncrementalAlterConfigs' changes; APPEND and SUBTRACT apply
/// to its lists only, as Kafka answers.
fn incremental(
    mut values: Values,
    changes: Vec<(String, i8, Option<String>)>,
) -> Result<Values, (i16, String)> {
    for (key, operation, value) in changes {
        let value = value.unwrap_or_default();
        match operation {
            0 => {
                values.insert(key, value);
            }
            1 => {
                values.remove(&key);
            }
            2 | 3 if key == subscriptions::INTERVAL_MS => {
                let name = if operation == 2 { "APPEND" } else { "SUBTRACT" };
                return Err((
                    errors::INVALID_CONFIG,
                    format!("Can't {name} to key {key} because its type is not LIST."),
                ));
            }
            2 | 3 => {
                let mut list: Vec<String> = values
                    .get(&key)
                    .map(|current| current.split(',').map(|e| e.trim().to_owned()).collect())
                    .unwrap_or_default();
                list.retain(|entry| !entry.is_empty());
                for entry in value.split(',').map(str::trim) {
                    if operation == 2 && !list.iter().any(|have| have == entry) {
                        list.push(entry.to_owned());
                    } else if operation == 3 {
                        list.retain(|have| have != entry);
                    }
                }
                values.insert(key, list.join(","));
            }
            other => {
                return Err((
                    errors::INVALID_REQUEST,
                    format!(
                        "config operation {other} on {key} is not one of SET, DELETE, APPEND, SUBTRACT"
                    ),
                ));
            }
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests;
