//! A share group moved between Kafka 4.4 and ferrolog with its data: its share state
//! (`__share_group_state`) and its group (`__consumer_offsets`) load as the other broker wrote
//! them.
//!
//! On one broker, four share consumers read 1,000 records, rejecting every 13th; 500 more
//! records are produced and the broker is stopped. The other broker, given its data (Kafka's
//! directory opened by ferrolog as it is; ferrolog's carried into Kafka by `move-to-kafka`,
//! which writes the share state anew under Kafka's topic ids), describes the group's offsets
//! as the first does when it loads its own directory again (start offsets and lags), and
//! share consumers there get exactly the 500 new records, once each: nothing accepted or
//! archived before the move is delivered again.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::time::{Duration, Instant};

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

#[test]
fn a_share_group_moves_from_ferrolog_to_kafka_with_its_state() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("ferrolog");
    let server = Server::start(&dir);
    let ours = format!("127.0.0.1:{}", server.port);
    let first = kafka_tool_ok(
        CHECK,
        &[
            "run", &ours, "moving", "moved", "4", "4", "1000", "120", "explicit",
        ],
        b"",
    );
    assert!(
        first.contains("accepted=923 accepted_twice=0 rejected=77"),
        "{first}"
    );
    kafka_tool_ok(CHECK, &["produce", &ours, "moved", "1000", "500"], b"");
    server.stop();
    // The group's offsets as ferrolog loads them again: what Kafka must load too.
    let server = Server::start(&dir);
    let in_ferrolog = describe(&format!("127.0.0.1:{}", server.port), "moving");
    server.stop();
    assert!(in_ferrolog.contains("moved"), "{in_ferrolog}");

    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, &[]);
    let bootstrap = kafka.bootstrap();
    let data = dir.to_str().unwrap();
    let created = common::move_to_kafka(&[
        "create-topics",
        "--log-dirs",
        data,
        "--bootstrap-server",
        &bootstrap,
    ]);
    assert!(
        created.contains("__share_group_state exists in Kafka with 50 partitions"),
        "{created}"
    );
    kafka.stop();
    let copy_args = [
        "copy",
        "--log-dirs",
        data,
        "--kafka-log-dirs",
        kafka_dir.to_str().unwrap(),
    ];
    let copied = common::move_to_kafka(&copy_args);
    assert!(
        copied.contains("4 share partitions' state written for Kafka's topic ids"),
        "{copied}"
    );
    // A second run finds its own work and leaves it as it is.
    assert!(common::move_to_kafka(&copy_args).contains("4 share partitions' state written"));
    kafka.restart();
    // Kafka's share coordinator loads its partitions after the broker starts; until then
    // the offsets are described as unknown.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut in_kafka = describe(&bootstrap, "moving");
    while in_kafka != in_ferrolog && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        in_kafka = describe(&bootstrap, "moving");
    }
    assert_eq!(in_kafka, in_ferrolog, "Kafka:\n{}", kafka.log());
    let drained = kafka_tool_ok(
        CHECK,
        &["drain", &bootstrap, "moving", "moved", "4", "500", "60"],
        b"",
    );
    assert!(
        drained.contains("accepted=500 min=1000 max=1499 accepted_twice=0"),
        "{drained}\nKafka:\n{}",
        kafka.log()
    );
}
