//! Manual partition assignments (CreateTopics' `assignments`, CreatePartitions'), checked as
//! Kafka's controller checks them (`ReplicationControlManager.validateManualPartitionAssignment`
//! and the checks around it), with the same errors and messages, for a cluster of one node:
//! every replica list must be exactly this node's id.

use std::collections::BTreeSet;

use crate::errors;

/// One partition's replicas: `Ok(their count)`, or why the assignment is refused. The ids are
/// looked at sorted, as Kafka does; `factor` is the replica count of the partitions before.
fn check_replicas(replicas: &[i32], node: i32, factor: Option<usize>) -> Result<usize, String> {
    if replicas.is_empty() {
        return Err("The manual partition assignment includes an empty replica list.".into());
    }
    let mut sorted = replicas.to_vec();
    sorted.sort_unstable();
    let mut previous = None;
    for &broker in &sorted {
        if broker != node {
            return Err(format!(
                "The manual partition assignment includes broker {broker}, but no such broker is registered."
            ));
        }
        if previous == Some(broker) {
            return Err(format!(
                "The manual partition assignment includes the broker {broker} more than once."
            ));
        }
        previous = Some(broker);
    }
    match factor {
        Some(factor) if factor != replicas.len() => Err(format!(
            "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {factor} replica(s).",
            replicas.len()
        )),
        _ => Ok(replicas.len()),
    }
}

/// A new topic's assignments, `(partition, replicas)` in request order, given with
/// `num_partitions` and `replication_factor`: the partition count they make, or the topic's
/// error.
pub fn new_topic_partitions(
    assignments: &[(i32, Vec<i32>)],
    num_partitions: i32,
    replication_factor: i16,
    node: i32,
) -> Result<i32, (i16, String)> {
    if replication_factor != -1 {
        return Err((
            errors::INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not set to -1."
                .into(),
        ));
    }
    if num_partitions != -1 {
        return Err((
            errors::INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1."
                .into(),
        ));
    }
    let invalid = |message: String| (errors::INVALID_REPLICA_ASSIGNMENT, message);
    let mut seen = BTreeSet::new();
    let mut factor = None;
    for (partition, replicas) in assignments {
        if !seen.insert(*partition) {
            return Err(invalid(format!(
                "Found multiple manual partition assignments for partition {partition}"
            )));
        }
        factor = Some(check_replicas(replicas, node, factor).map_err(invalid)?);
    }
    let count = assignments.len() as i32;
    if (0..count).any(|partition| !seen.contains(&partition)) {
        return Err(invalid(
            "partitions should be a consecutive 0-based integer sequence".into(),
        ));
    }
    Ok(count)
}

/// CreatePartitions' assignments for the `added` partitions of a topic whose replication
/// factor is `factor`: nothing, or the topic's error.
pub fn added_partitions(
    assignments: &[Vec<i32>],
    added: i32,
    factor: usize,
    node: i32,
) -> Result<(), (i16, String)> {
    let invalid = |message: String| (errors::INVALID_REPLICA_ASSIGNMENT, message);
    if assignments.len() as i64 != i64::from(added) {
        return Err(invalid(format!(
            "Attempted to add {added} additional partition(s), but only {} assignment(s) were specified.",
            assignments.len()
        )));
    }
    for replicas in assignments {
        check_replicas(replicas, node, Some(factor)).map_err(invalid)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<i32, (i16, String)>) -> (i16, String) {
        result.unwrap_err()
    }

    #[test]
    fn assignments_are_refused_as_kafka_refuses_them() {
        let node = 0;
        let ok = [(0, vec![0]), (1, vec![0]), (2, vec![0])];
        assert_eq!(new_topic_partitions(&ok, -1, -1, node), Ok(3));
        let (error, message) = code(new_topic_partitions(&ok, 3, -1, node));
        assert_eq!(error, errors::INVALID_REQUEST);
        assert!(message.contains("numPartitions"), "{message}");
        let (error, _) = code(new_topic_partitions(&ok, -1, 1, node));
        assert_eq!(error, errors::INVALID_REQUEST);
        for (assignments, expected) in [
            (
                vec![(0, vec![7])],
                "broker 7, but no such broker is registered",
            ),
            (vec![(0, vec![0, 0])], "the broker 0 more than once"),
            (vec![(0, vec![])], "an empty replica list"),
            (
                vec![(0, vec![0]), (0, vec![0])],
                "multiple manual partition assignments for partition 0",
            ),
            (vec![(0, vec![0]), (2, vec![0])], "consecutive 0-based"),
            (vec![(1, vec![0])], "consecutive 0-based"),
        ] {
            let (error, message) = code(new_topic_partitions(&assignments, -1, -1, node));
            assert_eq!(error, errors::INVALID_REPLICA_ASSIGNMENT, "{assignments:?}");
            assert!(message.contains(expected), "{assignments:?}: {message}");
        }
        // Another node's id is "no such broker" on a node of another id.
        assert!(new_topic_partitions(&[(0, vec![0])], -1, -1, 3).is_err());
    }

    #[test]
    fn added_partitions_need_one_assignment_each_at_the_topic_s_factor() {
        assert_eq!(added_partitions(&[vec![0], vec![0]], 2, 1, 0), Ok(()));
        let (error, message) = added_partitions(&[vec![0]], 2, 1, 0).unwrap_err();
        assert_eq!(error, errors::INVALID_REPLICA_ASSIGNMENT);
        assert!(
            message.contains("add 2 additional partition(s), but only 1"),
            "{message}"
        );
        let (_, message) = added_partitions(&[vec![0, 0]], 1, 1, 0).unwrap_err();
        assert!(message.contains("more than once"), "{message}");
    }
}
