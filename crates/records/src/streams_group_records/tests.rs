//! Each value against the bytes Kafka 4.4's own generated classes write for it
//! (`MessageUtil.toVersionPrefixedBytes`), both ways.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

use crate::tests_hex::hex;

fn pairs(list: &[(&str, &str)]) -> Vec<KeyValue> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn tasks(subtopology: &str, partitions: &[i32], epochs: Option<&[i32]>) -> TaskIds {
    TaskIds {
        subtopology_id: subtopology.to_owned(),
        partitions: partitions.to_vec(),
        assignment_epochs: epochs.map(<[i32]>::to_vec),
    }
}

#[test]
fn group_metadata_writes_only_tags_off_their_defaults() {
    let plain = StreamsGroupMetadata {
        epoch: 5,
        metadata_hash: -2,
        ..StreamsGroupMetadata::default()
    };
    let bytes = hex("000000000005fffffffffffffffe00");
    assert_eq!(plain.encode(), bytes);
    assert_eq!(StreamsGroupMetadata::decode(&bytes).unwrap(), plain);
    let tagged = StreamsGroupMetadata {
        epoch: 5,
        metadata_hash: 7,
        validated_topology_epoch: 2,
        last_assignment_configs: Some(pairs(&[("num.standby.replicas", "1")])),
        stored_description_topology_epoch: -2,
        failed_description_topology_epoch: 3,
    };
    let bytes = hex(concat!(
        "00000000000500000000000000070400040000000201190215",
        "6e756d2e7374616e6462792e7265706c696361730231000204fffffffe030400000003"
    ));
    assert_eq!(tagged.encode(), bytes);
    assert_eq!(StreamsGroupMetadata::decode(&bytes).unwrap(), tagged);
}

#[test]
fn member_metadata_with_and_without_an_endpoint() {
    let member = StreamsMemberMetadata {
        instance_id: None,
        rack_id: Some("r1".to_owned()),
        client_id: "c".to_owned(),
        client_host: "/h".to_owned(),
        rebalance_timeout_ms: 300_000,
        topology_epoch: 1,
        process_id: "p-1".to_owned(),
        user_endpoint: Some(("localhost".to_owned(), 60_000)),
        client_tags: pairs(&[("zone", "a")]),
    };
    let bytes = hex(concat!(
        "0000000372310263032f68000493e00000000104702d31010a6c6f63616c686f7374",
        "ea600002057a6f6e6502610000"
    ));
    assert_eq!(member.encode(), bytes);
    assert_eq!(StreamsMemberMetadata::decode(&bytes).unwrap(), member);
    // Kafka's default rack id is the empty string, not null.
    let bare = StreamsMemberMetadata {
        instance_id: Some("i".to_owned()),
        rack_id: Some(String::new()),
        client_id: "c".to_owned(),
        client_host: "/h".to_owned(),
        rebalance_timeout_ms: -1,
        process_id: "p".to_owned(),
        ..StreamsMemberMetadata::default()
    };
    let bytes = hex("00000269010263032f68ffffffff000000000270ff0100");
    assert_eq!(bare.encode(), bytes);
    assert_eq!(StreamsMemberMetadata::decode(&bytes).unwrap(), bare);
}

#[test]
fn target_and_current_assignments() {
    let target = StreamsTasks {
        active: vec![tasks("0", &[0, 2], None)],
        standby: vec![tasks("1", &[1], None)],
        warmup: Vec::new(),
    };
    let bytes = hex("0000020230030000000000000002000202310200000001000100");
    assert_eq!(target.encode(), bytes);
    assert_eq!(StreamsTasks::decode(&bytes).unwrap(), target);

    let current = StreamsCurrentAssignment {
        member_epoch: 4,
        previous_member_epoch: 3,
        state: 1,
        tasks: StreamsTasks {
            active: vec![tasks("0", &[0, 2], Some(&[3, 4]))],
            standby: Vec::new(),
            warmup: vec![tasks("1", &[5], None)],
        },
        pending_revocation: StreamsTasks {
            active: vec![tasks("0", &[1], None)],
            ..StreamsTasks::default()
        },
    };
    let bytes = hex(concat!(
        "0000000000040000000301020230030000000000000002010009030000000300000004",
        "01020231020000000500020230020000000100010100"
    ));
    assert_eq!(current.encode(), bytes);
    assert_eq!(StreamsCurrentAssignment::decode(&bytes).unwrap(), current);

    let metadata = TargetAssignmentMetadata {
        assignment_epoch: 6,
        assignment_timestamp: 1_700_000_000_000,
    };
    let bytes = hex("0000000000060100080000018bcfe56800");
    assert_eq!(encode_target_metadata(&metadata), bytes);
    assert_eq!(decode_target_metadata(&bytes).unwrap(), metadata);
}

#[test]
fn a_word_count_topology() {
    let topology = StreamsTopology {
        epoch: 1,
        subtopologies: vec![
            Subtopology {
                id: "0".to_owned(),
                source_topics: vec!["words".to_owned()],
                repartition_sink_topics: vec!["app-count-repartition".to_owned()],
                ..Subtopology::default()
            },
            Subtopology {
                id: "1".to_owned(),
                state_changelog_topics: vec![TopicInfo {
                    name: "app-count-changelog".to_owned(),
                    partitions: 0,
                    replication_factor: 0,
                    configs: pairs(&[("cleanup.policy", "compact")]),
                }],
                repartition_source_topics: vec![TopicInfo {
                    name: "app-count-repartition".to_owned(),
                    partitions: 4,
                    replication_factor: 1,
                    configs: Vec::new(),
                }],
                copartition_groups: vec![CopartitionGroup {
                    repartition_source_topics: vec![0],
                    ..CopartitionGroup::default()
                }],
                ..Subtopology::default()
            },
        ],
    };
    let bytes = hex(concat!(
        "0000000000010302300206776f726473010102166170702d636f756e742d7265706172",
        "746974696f6e0101000231010102146170702d636f756e742d6368616e67656c6f6700",
        "0000000000020f636c65616e75702e706f6c69637908636f6d70616374000001021661",
        "70702d636f756e742d7265706172746974696f6e000000040001010002010102000000",
        "0000"
    ));
    assert_eq!(topology.encode(), bytes);
    assert_eq!(StreamsTopology::decode(&bytes).unwrap(), topology);
}

#[test]
fn damage_is_an_error_naming_the_value() {
    let bytes = hex("0000020230030000000000000002000202310200000001000100");
    for cut in 0..bytes.len() {
        assert!(StreamsTasks::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let error = StreamsTopology::decode(&hex("0001"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("streams group topology value"), "{error}");
}
