//! AlterReplicaLogDirs: moves partitions to another of this node's data directories while they
//! serve (see the storage's `manager/moves.rs`). Answered as soon as each move has started, as
//! Kafka does; DescribeLogDirs shows its progress. Per partition, as Kafka 4.4 answers:
//! - a path that is not exactly one of `log.dirs` (absolute, no trailing `/`): LOG_DIR_NOT_FOUND;
//! - that directory offline, or any directory offline when a move must start:
//!   KAFKA_STORAGE_ERROR;
//! - a partition this node does not have: UNKNOWN_TOPIC_OR_PARTITION (Kafka's answer for a
//!   partition that does not exist); the directory is remembered for its creation, for at
//!   most `ferrolog.max.partitions` such partitions (Kafka remembers them all, for ever);
//! - a topic name Kafka would never create (illegal characters, too long, `.` or `..`):
//!   INVALID_TOPIC_EXCEPTION, and a negative partition UNKNOWN_TOPIC_OR_PARTITION, neither
//!   remembered (Kafka checks only the length of the future log's name);
//! - the partition already there: NONE, and a move elsewhere under way is cancelled;
//! - a partition named twice: the last directory naming it, one answer.
//!
//! Needs ALTER on the cluster (else CLUSTER_AUTHORIZATION_FAILED for every partition).

use std::collections::BTreeMap;
use std::path::Path;

use ferrolog_storage::manager::LogDirChange;
use ferrolog_storage::types::{TopicPartition, future_dir_name};
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::Asked;
use crate::{Context, errors};

/// The longest file name most file systems allow; a future log's name is not cut to fit.
const MAX_FILE_NAME_BYTES: usize = 255;
/// A future log's unique id is 32 hex digits.
const UNIQUE_ID_LEN: usize = 32;

pub fn handle(
    context: &Context,
    _asked: &Asked<'_>,
    request: AlterReplicaLogDirsRequest,
) -> AlterReplicaLogDirsResponse {
    let answered = destinations(&request)
        .into_iter()
        .map(|((name, partition), path)| {
            let code = alter_one(
                context,
                &TopicPartition::new(name.clone(), partition),
                Path::new(path),
            );
            (name, partition, code)
        });
    answer(answered)
}

/// Where each partition is asked to go: a partition named twice goes to the last directory
/// naming it, as in Kafka.
fn destinations(request: &AlterReplicaLogDirsRequest) -> BTreeMap<(String, i32), &str> {
    let mut asked = BTreeMap::new();
    for dir in &request.dirs {
        for topic in &dir.topics {
            for &partition in &topic.partitions {
                asked.insert((topic.name.0.to_string(), partition), dir.path.as_str());
            }
        }
    }
    asked
}

/// The answer, each partition once, grouped by topic in name order.
fn answer(answered: impl Iterator<Item = (String, i32, i16)>) -> AlterReplicaLogDirsResponse {
    let mut results: BTreeMap<String, Vec<AlterReplicaLogDirPartitionResult>> = BTreeMap::new();
    for (name, partition, code) in answered {
        results.entry(name).or_default().push(
            AlterReplicaLogDirPartitionResult::default()
                .with_partition_index(partition)
                .with_error_code(code),
        );
    }
    AlterReplicaLogDirsResponse::default().with_results(
        results
            .into_iter()
            .map(|(name, partitions)| {
                AlterReplicaLogDirTopicResult::default()
                    .with_topic_name(TopicName(StrBytes::from_string(name)))
                    .with_partitions(partitions)
            })
            .collect(),
    )
}

fn alter_one(context: &Context, topic_partition: &TopicPartition, path: &Path) -> i16 {
    if !errors::is_valid_topic_name(&topic_partition.topic) {
        return errors::INVALID_TOPIC_EXCEPTION;
    }
    if topic_partition.partition < 0 {
        return errors::UNKNOWN_TOPIC_OR_PARTITION;
    }
    let future_name_len = future_dir_name(topic_partition, "").len() + UNIQUE_ID_LEN;
    if future_name_len > MAX_FILE_NAME_BYTES {
        return errors::INVALID_TOPIC_EXCEPTION;
    }
    match context.manager.moves().alter_log_dir(topic_partition, path) {
        Ok(LogDirChange::AlreadyThere | LogDirChange::Moving) => errors::NONE,
        // A single node hosts every partition that exists: this one does not (yet).
        Ok(LogDirChange::Preferred) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        Err(error) => {
            tracing::warn!(partition = %topic_partition, path = %path.display(), %error, "could not alter the partition's log dir");
            errors::code_of(&error)
        }
    }
}

impl crate::refuse::Refuse for AlterReplicaLogDirsRequest {
    /// Every partition is answered with the refusal.
    fn refused(&self, _version: i16, code: i16) -> AlterReplicaLogDirsResponse {
        let refused = destinations(self).into_keys();
        answer(refused.map(|(name, partition)| (name, partition, code)))
    }
}

/// The request the authorization tests probe this API with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use kafka_protocol::messages::alter_replica_log_dirs_request::{
        AlterReplicaLogDir, AlterReplicaLogDirTopic,
    };
    use kafka_protocol::messages::{AlterReplicaLogDirsRequest, TopicName};

    use crate::probes::{Probed, text};

    impl Probed for AlterReplicaLogDirsRequest {
        fn probe(topic: &str, _group: &str) -> (i16, Self) {
            // Allowed, it names no directory of either broker: LOG_DIR_NOT_FOUND.
            let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
                AlterReplicaLogDir::default()
                    .with_path(text("/no-such-log-dir"))
                    .with_topics(vec![
                        AlterReplicaLogDirTopic::default()
                            .with_name(TopicName(text(topic)))
                            .with_partitions(vec![0]),
                    ]),
            ]);
            (2, request)
        }
    }
}
