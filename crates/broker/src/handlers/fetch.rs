//! Fetch: record bytes as they lie in the segment files, never decoded. When fewer than
//! `min_bytes` are ready, the request waits (up to `max_wait_ms`) and is woken by the next
//! produce to one of the partitions it reads ([`crate::fetch_waiters`]), never longer than
//! `connections.max.idle.ms` (a connection waiting on a fetch is idle); the first partition
//! with data returns at least one whole batch, so a batch larger than the limits is never stuck. Fetch sessions are not kept: every response is a full one
//! (session id 0).
//!
//! A `read_committed` fetch (isolation level 1) reads up to the partition's last stable offset
//! and carries the aborted transactions of the range read, for the consumer to drop their
//! records; a `read_uncommitted` one reads up to the high watermark and carries none (null).
//!
//! A partition's current leader epoch, when the request sends one (v9+, not negative), is
//! checked against the partition's: FENCED_LEADER_EPOCH below it, UNKNOWN_LEADER_EPOCH above.
//!
//! A consumer needs READ on each topic it fetches; a topic it may not read is answered
//! TOPIC_AUTHORIZATION_FAILED on every partition, whether it exists or not.
//!
//! A consumer under a quota asks for no more than it allows, and a fetch whose bytes take its
//! rate over the quota is answered empty with the throttle time (see [`super::throttling`]).
//!
//! The response carries placeholders for the record bytes; the returned [`FileRegion`]s say
//! which segment bytes replace them when the frame is written (see [`crate::response`]).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ProducerId};
use kafka_protocol::protocol::Encodable as _;

use ferrolog_storage::log::{FetchBound, FetchData, FetchParams, FirstBatch};
use ferrolog_storage::{Offset, TopicPartition};

use super::offset_for_leader_epoch::check_current_epoch;
use super::{throttling, with_logs};
use crate::authz::Asked;
use crate::authz::{AclOperation, ResourceType};
use crate::fetch_waiters::Waiting;
use crate::response::FileRegion;
use crate::{Context, errors};

pub async fn handle(
    context: &Arc<Context>,
    asked: &Asked<'_>,
    request: FetchRequest,
) -> (FetchResponse, Vec<FileRegion>) {
    let deadline = Instant::now() + wait_at_most(&context.config, request.max_wait_ms);
    let denied = Arc::new(denied_topics(context, asked, &request));
    let consumer = request.replica_id.0 < 0;
    let client_id = asked.header().client_id.as_deref().unwrap_or_default();
    let mut request = request;
    if consumer {
        let most =
            throttling::fetch_max_bytes(context, asked.session(), client_id, request.max_bytes);
        request.min_bytes = request.min_bytes.min(most);
        request.max_bytes = most;
    }
    let request = Arc::new(request);
    let partitions: Vec<TopicPartition> = request
        .topics
        .iter()
        .filter(|topic| !denied.contains(topic.topic.0.as_str()))
        .flat_map(|topic| {
            topic.partitions.iter().map(|partition| {
                TopicPartition::new(topic.topic.0.to_string(), partition.partition)
            })
        })
        .collect();
    // Leaves the waiters when the fetch ends, answered or dropped with its connection.
    let waiting = Waiting::new(&context.fetch_waiters, partitions);
    loop {
        // Registered before reading, so a produce between the read and the wait still wakes us
        // (the waiter keeps the wake-up until it waits).
        waiting.register();
        let (context_copy, request_copy, denied_copy, version) = (
            Arc::clone(context),
            Arc::clone(&request),
            Arc::clone(&denied),
            asked.version(),
        );
        let attempt = crate::bridge::blocking(move || {
            read_once(&context_copy, &request_copy, &denied_copy, version)
        })
        .await;
        let (response, regions, bytes) = match attempt {
            Ok(result) => result,
            Err(_) => (
                FetchResponse::default().with_error_code(errors::UNKNOWN_SERVER_ERROR),
                Vec::new(),
                0,
            ),
        };
        if bytes >= i64::from(request.min_bytes) || Instant::now() >= deadline {
            // A consumer's fetch counts against its byte rate and request quotas (a
            // follower's is exempt from both, as in Kafka).
            if consumer {
                let size = response.compute_size(asked.version()).unwrap_or(0) + 4;
                let throttle = throttling::fetched(context, asked.session(), client_id, size);
                if throttle > 0 {
                    // Answered empty, as Kafka answers a throttled fetch.
                    let empty = FetchResponse::default().with_throttle_time_ms(throttle);
                    return (empty, Vec::new());
                }
            }
            record_metrics(&response);
            return (response, regions);
        }
        tokio::select! {
            () = waiting.woken() => {}
            () = tokio::time::sleep(deadline.saturating_duration_since(Instant::now())) => {}
        }
    }
}

/// The topics the session may not read: READ on each topic for a consumer. A follower's fetch
/// (a replica id of 0 or more) needs CLUSTER_ACTION on the cluster instead, and without it
/// every topic is refused, as Kafka refuses it.
fn denied_topics(_context: &Context, asked: &Asked<'_>, request: &FetchRequest) -> HashSet<String> {
    let names = request.topics.iter().map(|topic| topic.topic.0.as_str());
    let denied: Vec<&str> = if request.replica_id.0 >= 0 {
        if asked.may_on_cluster(AclOperation::ClusterAction) {
            Vec::new()
        } else {
            names.collect()
        }
    } else {
        names
            .filter(|name| !asked.allows(ResourceType::Topic, name))
            .collect()
    };
    denied.into_iter().map(str::to_owned).collect()
}

/// Bytes out per topic, for the response actually sent.
fn record_metrics(response: &FetchResponse) {
    for topic in &response.responses {
        let mut bytes = 0u64;
        for partition in &topic.partitions {
            bytes += partition.records.as_ref().map_or(0, |r| r.len() as u64);
        }
        if bytes > 0 {
            crate::metrics::record_fetched(&topic.topic.0, bytes);
        }
    }
}

/// One pass over the requested partitions; returns the response, the file regions its
/// placeholders stand for, and the record bytes it carries.
fn read_once(
    context: &Context,
    request: &FetchRequest,
    denied: &HashSet<String>,
    version: i16,
) -> (FetchResponse, Vec<FileRegion>, i64) {
    // Kafka's broker-side cap (`fetch.max.bytes`) on what one fetch may ask for.
    let mut budget = i64::from(request.max_bytes.clamp(0, context.config.fetch_max_bytes));
    let mut total = 0i64;
    let mut regions = Vec::new();
    let mut first = true;
    // read_committed (1) stops at the last stable offset and lists the aborted transactions.
    let bound = if request.isolation_level == 1 {
        FetchBound::LastStable
    } else {
        FetchBound::HighWatermark
    };
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            if denied.contains(topic.topic.0.as_str()) {
                return refused_topic(topic);
            }
            let partitions = with_logs(context, &topic.topic.0, &topic.partitions, |partition| {
                partition.partition
            })
            .map(|(partition, log)| {
                let response = PartitionData::default().with_partition_index(partition.partition);
                let Some(log) = log else {
                    return response.with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION);
                };
                // As Kafka's Fetch, any negative current epoch is none to check.
                let current = partition.current_leader_epoch;
                if current >= 0
                    && let Err(code) = check_current_epoch(log.leader_epoch().value(), current)
                {
                    return response.with_error_code(code);
                }
                let max_bytes = i64::from(partition.partition_max_bytes.max(0)).min(budget);
                let read = log.read(FetchParams {
                    start_offset: Offset::new(partition.fetch_offset),
                    max_bytes: u64::try_from(max_bytes).unwrap_or(0),
                    bound,
                    first_batch: if first {
                        FirstBatch::Whole
                    } else {
                        FirstBatch::WithinLimit
                    },
                });
                let (watermarks, outcome) = match read {
                    Ok(data) => (data.watermarks, Ok(data)),
                    // A refusal still says where the log lies.
                    Err(error) => (log.watermarks(), Err(error)),
                };
                let mut response = response
                    .with_high_watermark(watermarks.high_watermark.value())
                    .with_last_stable_offset(watermarks.last_stable_offset.value());
                if version >= 5 {
                    response = response.with_log_start_offset(watermarks.log_start_offset.value());
                }
                if let Ok(data) = &outcome {
                    response = response.with_aborted_transactions(aborted_transactions(data));
                }
                match outcome.and_then(|data| records(data, &mut regions)) {
                    Ok(records) => {
                        let length = records.len() as i64;
                        if length > 0 {
                            first = false;
                        }
                        budget -= length;
                        total += length;
                        response.with_records(Some(records))
                    }
                    Err(error) => response.with_error_code(errors::code_of(&error)),
                }
            })
            .collect();
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    (
        FetchResponse::default().with_responses(topics),
        regions,
        total,
    )
}

/// Kafka's answer for a topic the session may not read: nothing known about its logs.
fn refused_topic(
    topic: &kafka_protocol::messages::fetch_request::FetchTopic,
) -> FetchableTopicResponse {
    let refused = topic.partitions.iter().map(|partition| {
        PartitionData::default()
            .with_partition_index(partition.partition)
            .with_error_code(errors::TOPIC_AUTHORIZATION_FAILED)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_records(Some(Bytes::new()))
    });
    FetchableTopicResponse::default()
        .with_topic(topic.topic.clone())
        .with_partitions(refused.collect())
}

/// The aborted transactions a read_committed read lists (`None` for read_uncommitted).
fn aborted_transactions(data: &FetchData) -> Option<Vec<AbortedTransaction>> {
    data.aborted_txns.as_ref().map(|aborted| {
        aborted
            .iter()
            .map(|txn| {
                AbortedTransaction::default()
                    .with_producer_id(ProducerId(txn.producer_id))
                    .with_first_offset(txn.first_offset.value())
            })
            .collect()
    })
}

/// What the codec gets for one partition's records: a placeholder for a region left in the
/// file (queued in `regions`), or the bytes themselves if no placeholder region could be
/// mapped at all.
fn records(data: FetchData, regions: &mut Vec<FileRegion>) -> ferrolog_storage::Result<Bytes> {
    // An empty slice (the response's limit was spent by earlier partitions) is an empty
    // record set, not a region: an empty placeholder could not be told from the codec's own
    // empty writes.
    let Some(region) = data.slice.and_then(FileRegion::of) else {
        return Ok(Bytes::new());
    };
    match region.placeholder() {
        Some(placeholder) => {
            regions.push(region);
            Ok(placeholder)
        }
        None => region.slice.read_bytes().map(Bytes::from),
    }
}

/// How long a fetch may wait for data: its `max_wait_ms` (none when negative), and no longer
/// than `connections.max.idle.ms`, as a connection whose only request is a long poll is idle:
/// Kafka closes it there, ferrolog answers it.
fn wait_at_most(config: &crate::BrokerConfig, max_wait_ms: i32) -> Duration {
    let asked = Duration::from_millis(u64::try_from(max_wait_ms).unwrap_or(0));
    config
        .connections_max_idle
        .map_or(asked, |idle| asked.min(idle))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_waits_no_longer_than_the_idle_limit() {
        let config = crate::BrokerConfig {
            connections_max_idle: Some(Duration::from_secs(600)),
            ..crate::BrokerConfig::default()
        };
        assert_eq!(wait_at_most(&config, 500), Duration::from_millis(500));
        assert_eq!(wait_at_most(&config, i32::MAX), Duration::from_secs(600));
        assert_eq!(wait_at_most(&config, -1), Duration::ZERO);
        let unlimited = crate::BrokerConfig {
            connections_max_idle: None,
            ..config
        };
        assert_eq!(
            wait_at_most(&unlimited, i32::MAX),
            Duration::from_millis(i32::MAX as u64)
        );
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{FetchRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for FetchRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            let request = FetchRequest::default()
                .with_max_bytes(1 << 20)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(TopicName(text(topic)))
                        .with_partitions(vec![
                            FetchPartition::default().with_partition_max_bytes(1 << 20),
                        ]),
                ]);
            (12, request)
        }
    }
}
