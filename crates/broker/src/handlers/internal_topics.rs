//! Kafka's internal topics and what clients may do to them.
//!
//! As Kafka, ferrolog refuses Produce to an internal topic (unless the client calls itself
//! `__admin_client`, Kafka's own admin tooling) and DeleteRecords on one, with
//! INVALID_TOPIC_EXCEPTION. Kafka lets a client create an internal topic with settings of its
//! choosing, delete one, add partitions to it, or change its configuration, and relies on ACLs
//! to stop that; each of those loses consumer groups' committed offsets (a deleted topic; a
//! partition count other than `offsets.topic.num.partitions` placing groups elsewhere; a
//! `cleanup.policy` letting retention delete them), so ferrolog refuses them whatever the ACLs. docs/operations.md lists these differences.

use std::collections::BTreeMap;

use crate::errors;

/// Kafka's internal topics (`Topic.INTERNAL_TOPICS`).
const INTERNAL_TOPICS: &[&str] = &[
    crate::group::offsets_topic::OFFSETS_TOPIC,
    "__transaction_state",
    SHARE_STATE_TOPIC,
];

const SHARE_STATE_TOPIC: &str = ferrolog_coordinator::share_state::SHARE_STATE_TOPIC;

/// The client id Kafka's admin tools use; Kafka lets it produce to internal topics.
const ADMIN_CLIENT_ID: &str = "__admin_client";

/// A refusal: the error code and the message for the client.
pub type Refusal = (i16, String);

pub fn is_internal(topic: &str) -> bool {
    INTERNAL_TOPICS.contains(&topic)
}

/// Produce by `client_id` to `topic`.
pub fn produce_refusal(topic: &str, client_id: Option<&str>) -> Option<Refusal> {
    (is_internal(topic) && client_id != Some(ADMIN_CLIENT_ID)).then(|| {
        (
            errors::INVALID_TOPIC_EXCEPTION,
            format!("cannot append to internal topic {topic}"),
        )
    })
}

/// DeleteRecords on `topic`.
pub fn delete_records_refusal(topic: &str) -> Option<Refusal> {
    is_internal(topic).then(|| {
        (
            errors::INVALID_TOPIC_EXCEPTION,
            format!("cannot delete records of internal topic {topic}"),
        )
    })
}

/// DeleteTopics of `topic`. Before DeleteTopics v3, Kafka answers a refused deletion with
/// INVALID_REQUEST, from v3 on with TOPIC_DELETION_DISABLED.
pub fn deletion_refusal(topic: &str, version: i16) -> Option<Refusal> {
    is_internal(topic).then(|| {
        (
            if version >= 3 {
                errors::TOPIC_DELETION_DISABLED
            } else {
                errors::INVALID_REQUEST
            },
            format!(
                "{topic} is an internal topic: deleting it would lose every consumer group's committed offsets"
            ),
        )
    })
}

/// CreateTopics for `topic`: the broker makes its internal topics itself, with their settings
/// (`__consumer_offsets` on the first FindCoordinator, compacted, with
/// `offsets.topic.num.partitions` partitions).
pub fn creation_refusal(topic: &str) -> Option<Refusal> {
    is_internal(topic).then(|| {
        (
            errors::INVALID_REQUEST,
            format!("{topic} is an internal topic: the broker creates it, with its own settings"),
        )
    })
}

/// CreatePartitions for `topic`.
pub fn repartition_refusal(topic: &str) -> Option<Refusal> {
    is_internal(topic).then(|| {
        (
            errors::INVALID_REQUEST,
            format!(
                "{topic} is an internal topic: its partition count is fixed, since groups are placed by it"
            ),
        )
    })
}

/// New topic-level overrides for `topic`: an internal topic keeps its policy, set explicitly
/// (so that neither a legacy AlterConfigs, which replaces every override, nor a deleted
/// override hands it to the broker's default): `cleanup.policy=compact`, but
/// `__share_group_state`, which Kafka prunes itself, keeps `cleanup.policy=delete` with
/// `retention.ms=-1`.
pub fn config_refusal(topic: &str, overrides: &BTreeMap<String, String>) -> Option<Refusal> {
    let value = |key: &str| overrides.get(key).map(|value| value.trim());
    if topic == SHARE_STATE_TOPIC {
        let kept = value("cleanup.policy") == Some("delete") && value("retention.ms") == Some("-1");
        return (!kept).then(|| {
            (
                errors::INVALID_CONFIG,
                format!(
                    "{topic} is an internal topic: cleanup.policy must stay delete and retention.ms -1, or retention would delete share groups' state"
                ),
            )
        });
    }
    (is_internal(topic) && value("cleanup.policy") != Some("compact")).then(|| {
        (
            errors::INVALID_CONFIG,
            format!(
                "{topic} is an internal topic: cleanup.policy must stay compact, or retention would delete the committed offsets"
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_topics_are_kafkas() {
        assert!(is_internal("__consumer_offsets"));
        assert!(is_internal("__transaction_state"));
        assert!(!is_internal("__cluster_metadata"));
        assert!(!is_internal("__my_topic"));
    }

    #[test]
    fn produce_is_refused_except_to_kafkas_admin_client() {
        assert_eq!(
            produce_refusal("__consumer_offsets", Some("app")).map(|r| r.0),
            Some(errors::INVALID_TOPIC_EXCEPTION)
        );
        assert_eq!(
            produce_refusal("__consumer_offsets", Some("__admin_client")),
            None
        );
        assert_eq!(produce_refusal("events", None), None);
    }

    #[test]
    fn only_a_compacting_policy_is_accepted_for_an_internal_topic() {
        let set = |policy: &str| BTreeMap::from([("cleanup.policy".to_owned(), policy.to_owned())]);
        assert!(config_refusal("__consumer_offsets", &set("delete")).is_some());
        assert!(config_refusal("__consumer_offsets", &set("compact,delete")).is_some());
        assert!(config_refusal("__consumer_offsets", &set("compact")).is_none());
        assert!(
            config_refusal("__consumer_offsets", &BTreeMap::new()).is_some(),
            "removing the override would hand it the broker's default policy"
        );
        assert!(config_refusal("events", &set("delete")).is_none());
    }

    #[test]
    fn the_share_state_topic_keeps_deleting_nothing_by_time() {
        let kept = BTreeMap::from([
            ("cleanup.policy".to_owned(), "delete".to_owned()),
            ("retention.ms".to_owned(), "-1".to_owned()),
        ]);
        assert!(config_refusal("__share_group_state", &kept).is_none());
        let mut shorter = kept.clone();
        shorter.insert("retention.ms".to_owned(), "60000".to_owned());
        assert!(config_refusal("__share_group_state", &shorter).is_some());
        let mut compacted = kept;
        compacted.insert("cleanup.policy".to_owned(), "compact".to_owned());
        assert!(config_refusal("__share_group_state", &compacted).is_some());
    }
}
