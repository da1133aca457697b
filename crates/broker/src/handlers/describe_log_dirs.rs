//! DescribeLogDirs: each data directory with its partitions and their sizes (all, or the ones
//! asked for), and (v4) the size and free bytes of its file system. A partition moving to
//! another directory is listed twice, as Kafka lists it: its current log (offset lag 0) and its
//! future log (`IsFutureKey`, lagging the current log's end by the offsets still to copy). An
//! offline directory reports KAFKA_STORAGE_ERROR.
//!
//! A partition in which the scrubber found damage carries it in a tagged field of its own
//! ([`DAMAGE_TAG`], from v2, the first flexible version): one line per damaged segment, naming
//! the `.log`, the byte position and what is wrong. Kafka's clients keep unknown tagged fields
//! aside, so they read the answer as before; `ferrolog log-dirs` prints it.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::{Context, errors};

/// The tag of a partition's damage in DescribeLogDirs; far above the tags Kafka numbers from
/// 0, so that none of Kafka's future fields meets it.
pub const DAMAGE_TAG: i32 = 10_000;

/// The damage the scrubber found in a partition, as DescribeLogDirs carries it: one line per
/// damaged segment.
fn damage_lines(log: &ferrolog_storage::log::Log) -> Option<bytes::Bytes> {
    let lines: Vec<String> = log
        .known_damage()
        .into_iter()
        .map(|(file, position, reason)| format!("{} at byte {position}: {reason}", file.display()))
        .collect();
    (!lines.is_empty()).then(|| bytes::Bytes::from(lines.join("\n")))
}

pub fn handle(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let wanted = |topic: &str, partition: i32| match &request.topics {
        None => true,
        Some(topics) => topics
            .iter()
            .any(|asked| asked.topic.0.as_str() == topic && asked.partitions.contains(&partition)),
    };
    let logs = context.manager.logs();
    let futures = context.manager.moves().future_logs();
    let results = context
        .manager
        .data_dirs()
        .iter()
        .map(|dir| {
            let mut result = DescribeLogDirsResult::default()
                .with_log_dir(StrBytes::from_string(dir.path().display().to_string()));
            if dir.is_offline() {
                return result.with_error_code(errors::KAFKA_STORAGE_ERROR);
            }
            let mut topics: BTreeMap<String, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
            for (tp, log) in &logs {
                let in_this_dir = context
                    .manager
                    .dir_of(tp)
                    .is_some_and(|owner| std::sync::Arc::ptr_eq(owner, dir));
                if in_this_dir && wanted(&tp.topic, tp.partition) {
                    // Kafka: max(HW − LEO, 0), which a single replica keeps at 0.
                    let lag = (log.high_watermark() - log.log_end_offset()).max(0);
                    let mut partition = DescribeLogDirsPartition::default()
                        .with_partition_index(tp.partition)
                        .with_partition_size(log.size_in_bytes() as i64)
                        .with_offset_lag(lag);
                    if asked.version() >= 2
                        && let Some(damage) = damage_lines(log)
                    {
                        partition.unknown_tagged_fields.insert(DAMAGE_TAG, damage);
                    }
                    topics.entry(tp.topic.clone()).or_default().push(partition);
                }
            }
            for future in &futures {
                let tp = &future.topic_partition;
                let in_this_dir = context
                    .manager
                    .data_dirs()
                    .get(future.dir_index)
                    .is_some_and(|owner| std::sync::Arc::ptr_eq(owner, dir));
                if in_this_dir && wanted(&tp.topic, tp.partition) {
                    let lag = context.manager.get(tp).map_or(-1, |current| {
                        current.log_end_offset() - future.log.log_end_offset()
                    });
                    topics.entry(tp.topic.clone()).or_default().push(
                        DescribeLogDirsPartition::default()
                            .with_partition_index(tp.partition)
                            .with_partition_size(future.log.size_in_bytes() as i64)
                            .with_offset_lag(lag)
                            .with_is_future_key(true),
                    );
                }
            }
            result = result.with_topics(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        DescribeLogDirsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
            if asked.version() >= 4 {
                result = result
                    .with_total_bytes(dir.total_bytes() as i64)
                    .with_usable_bytes(dir.free_bytes() as i64);
            }
            result
        })
        .collect();
    DescribeLogDirsResponse::default().with_results(results)
}

impl crate::refuse::Refuse for DescribeLogDirsRequest {
    /// No directory is described; from v3 the refusal is said too.
    fn refused(&self, version: i16, code: i16) -> DescribeLogDirsResponse {
        let response = DescribeLogDirsResponse::default();
        if version >= 3 {
            response.with_error_code(code)
        } else {
            response
        }
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::DescribeLogDirsRequest;

    use crate::probes::Probed;

    impl Probed for DescribeLogDirsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            (4, DescribeLogDirsRequest::default().with_topics(None))
        }
    }
}
