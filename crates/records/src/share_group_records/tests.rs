//! Each value against the bytes Kafka 4.4's own generated classes write for it
//! (`MessageUtil.toVersionPrefixedBytes`), both ways.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::tests_hex::hex;

const TOPIC: TopicIdBytes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

#[test]
fn member_metadata_with_and_without_a_rack() {
    let member = ShareMemberMetadata {
        rack_id: Some("r1".to_owned()),
        client_id: "c".to_owned(),
        client_host: "/h".to_owned(),
        subscribed_topic_names: vec!["a".to_owned(), "bb".to_owned()],
    };
    let bytes = hex("00000372310263032f6803026103626200");
    assert_eq!(member.encode(), bytes);
    assert_eq!(ShareMemberMetadata::decode(&bytes).unwrap(), member);
    let bare = ShareMemberMetadata {
        rack_id: None,
        subscribed_topic_names: Vec::new(),
        ..member
    };
    let bytes = hex("0000000263032f680100");
    assert_eq!(bare.encode(), bytes);
    assert_eq!(ShareMemberMetadata::decode(&bytes).unwrap(), bare);
}

#[test]
fn group_metadata_has_its_hash_in_the_fixed_part() {
    let value = ShareGroupMetadata {
        epoch: 5,
        metadata_hash: -2,
    };
    let bytes = hex("000000000005fffffffffffffffe00");
    assert_eq!(value.encode(), bytes);
    assert_eq!(ShareGroupMetadata::decode(&bytes).unwrap(), value);
}

#[test]
fn target_member_and_current_assignment() {
    let topics = vec![ShareTopicPartitions {
        topic_id: TOPIC,
        partitions: vec![0, 2],
    }];
    let bytes = hex("0000020102030405060708090a0b0c0d0e0f100300000000000000020000");
    assert_eq!(encode_target_member(&topics), bytes);
    assert_eq!(decode_target_member(&bytes).unwrap(), topics);
    let current = ShareCurrentAssignment {
        member_epoch: 3,
        previous_member_epoch: 2,
        state: 0,
        assigned: vec![ShareTopicPartitions {
            topic_id: TOPIC,
            partitions: vec![1],
        }],
    };
    let bytes = hex("0000000000030000000200020102030405060708090a0b0c0d0e0f1002000000010000");
    assert_eq!(current.encode(), bytes);
    assert_eq!(ShareCurrentAssignment::decode(&bytes).unwrap(), current);
}

#[test]
fn state_partition_metadata_keeps_no_partitions_for_deleting_topics() {
    let topic = |name: &str, partitions: &[i32]| StateTopic {
        topic_id: TOPIC,
        topic_name: name.to_owned(),
        partitions: partitions.to_vec(),
    };
    let value = ShareStatePartitions {
        initializing: vec![topic("a", &[3])],
        initialized: vec![topic("b", &[0, 1])],
        deleting: vec![topic("c", &[])],
    };
    let bytes = hex(concat!(
        "0000020102030405060708090a0b0c0d0e0f1002610200000003000201020304",
        "05060708090a0b0c0d0e0f10026203000000000000000100020102030405060708",
        "090a0b0c0d0e0f1002630000"
    ));
    assert_eq!(value.encode(), bytes);
    assert_eq!(ShareStatePartitions::decode(&bytes).unwrap(), value);
}

#[test]
fn a_truncated_value_is_an_error_naming_it() {
    let error = ShareGroupMetadata::decode(&hex("0000000000")).unwrap_err();
    assert!(
        error.to_string().contains("share group metadata value"),
        "{error}"
    );
}
