//! A share group moved from Kafka 4.4 to ferrolog with its data directory: its share state
//! (`__share_group_state`) and its group (`__consumer_offsets`) load as Kafka wrote them.
//!
//! On Kafka, four share consumers read 1,000 records, rejecting every 13th; 500 more records
//! are produced and Kafka is stopped. ferrolog, opened on a copy of its directory, describes the
//! group's offsets as Kafka does when it loads the same directory (start offsets and lags), and
//! share consumers there get exactly the 500 new records, once each: nothing Kafka had accepted
//! or archived is delivered again.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use common::Server;
use common::kafka::{KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok};

const CHECK: &str = "ShareGroupCheck";
const SHARE_GROUPS: &str = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";

/// `kafka-share-groups --describe` of `group`: its offsets.
fn describe(bootstrap: &str, group: &str) -> String {
    let output = kafka_tool(
        SHARE_GROUPS,
        &[
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
        ],
        b"",
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_share_group_moves_from_kafka_to_ferrolog_with_its_state() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, &[]);
    let bootstrap = kafka.bootstrap();
    let first = kafka_tool_ok(
        CHECK,
        &[
            "run", &bootstrap, "moving", "moved", "4", "4", "1000", "120", "explicit",
        ],
        b"",
    );
    assert!(
        first.contains("accepted=923 accepted_twice=0 rejected=77"),
        "{first}"
    );
    kafka_tool_ok(CHECK, &["produce", &bootstrap, "moved", "1000", "500"], b"");
    kafka.stop();
    // The group's offsets as Kafka loads them again: what ferrolog must load too.
    kafka.restart();
    let in_kafka = describe(&bootstrap, "moving");
    kafka.stop();
    assert!(in_kafka.contains("moved"), "{in_kafka}");
    let copy = temp.path().join("copy");
    common::copy_dir(&kafka_dir, &copy);
    let server = Server::start(&copy);
    let ours = format!("127.0.0.1:{}", server.port);
    assert_eq!(
        describe(&ours, "moving"),
        in_kafka,
        "ferrolog:\n{}",
        server.stderr()
    );
    let drained = kafka_tool_ok(
        CHECK,
        &["drain", &ours, "moving", "moved", "4", "500", "60"],
        b"",
    );
    assert!(
        drained.contains("accepted=500 min=1000 max=1499 accepted_twice=0"),
        "{drained}\nferrolog:\n{}",
        server.stderr()
    );
}
