//! DescribeLogDirs: each data directory with its partitions and their sizes (all, or the ones
//! asked for), and (v4) the size and free bytes of its file system. A partition moving to
//! another directory is listed twice, as Kafka lists it: its current log (offset lag 0) and its
//! future log (`IsFutureKey`, lagging the current log's end by the offsets still to copy). An
//! offline directory reports KAFKA_STORAGE_ERROR.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::{Context, errors};

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
                    topics.entry(tp.topic.clone()).or_default().push(
                        DescribeLogDirsPartition::default()
                            .with_partition_index(tp.partition)
                            .with_partition_size(log.size_in_bytes() as i64)
                            .with_offset_lag(lag),
                    );
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
