//! Keys and values against the bytes Kafka 4.4's own generated classes write for them
//! (`MessageUtil.toCoordinatorTypePrefixedBytes`, `toVersionPrefixedBytes`), both ways.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;
use crate::tests_hex::hex;

const TOPIC: TopicIdBytes = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

#[test]
fn keys_of_both_types() {
    for (kind, bytes) in [
        (
            ShareStateRecordType::Snapshot,
            "00000001670102030405060708090a0b0c0d0e0f1000000007",
        ),
        (
            ShareStateRecordType::Update,
            "00010001670102030405060708090a0b0c0d0e0f1000000007",
        ),
    ] {
        let key = ShareStateKey {
            kind,
            group: "g".to_owned(),
            topic_id: TOPIC,
            partition: 7,
        };
        assert_eq!(key.encode(), hex(bytes));
        assert_eq!(ShareStateKey::decode(&hex(bytes)).unwrap(), key);
    }
    let error = ShareStateKey::decode(&hex("00020001670102")).unwrap_err();
    assert!(error.to_string().contains("record type"), "{error}");
}

#[test]
fn a_snapshot_writes_its_complete_count_only_when_known() {
    let snapshot = ShareSnapshot {
        snapshot_epoch: 1,
        state_epoch: 2,
        leader_epoch: 3,
        start_offset: 100,
        delivery_complete_count: -1,
        create_timestamp: 7,
        write_timestamp: 8,
        batches: vec![StateBatch {
            first_offset: 100,
            last_offset: 104,
            delivery_state: 2,
            delivery_count: 1,
        }],
    };
    let bytes = hex(concat!(
        "0000000000010000000200000003000000000000006400000000000000070000000000000008",
        "02000000000000006400000000000000680200010000"
    ));
    assert_eq!(snapshot.encode(), bytes);
    assert_eq!(ShareSnapshot::decode(&bytes).unwrap(), snapshot);
    let counted = ShareSnapshot {
        delivery_complete_count: 4,
        batches: Vec::new(),
        ..snapshot
    };
    let bytes = hex(concat!(
        "0000000000010000000200000003000000000000006400000000000000070000000000000008",
        "0101000400000004"
    ));
    assert_eq!(counted.encode(), bytes);
    assert_eq!(ShareSnapshot::decode(&bytes).unwrap(), counted);
}

#[test]
fn an_update() {
    let update = ShareUpdate {
        snapshot_epoch: 1,
        leader_epoch: 3,
        start_offset: -1,
        delivery_complete_count: 2,
        batches: vec![StateBatch {
            first_offset: 5,
            last_offset: 5,
            delivery_state: 4,
            delivery_count: 5,
        }],
    };
    let bytes = hex(concat!(
        "00000000000100000003ffffffffffffffff0200000000000000050000000000000005",
        "0400050001000400000002"
    ));
    assert_eq!(update.encode(), bytes);
    assert_eq!(ShareUpdate::decode(&bytes).unwrap(), update);
}
