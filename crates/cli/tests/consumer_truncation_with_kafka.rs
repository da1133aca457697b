//! A log cut under a consumer's committed position, as recovery cuts a log whose tail a crash
//! lost, and what Kafka's Java consumer does next (KIP-320): it asks the broker
//! (OffsetForLeaderEpoch) where the epoch of its position ended, and goes back to where the log
//! now ends rather than to `auto.offset.reset`; with no reset policy it throws
//! LogTruncationException naming that offset. The same steps run against ferrolog and Kafka 4.4:
//! 20 records, two groups commit offset 20, the broker is SIGKILLed, its partition's log cut
//! after the tenth record, the broker started again, five records written.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::Command;

use common::answers::wait_until_serving;
use common::kafka::{KafkaPeer, kafka_available};
use common::{Server, free_port};
use ferrolog_records::EntryIter;

const TOPIC: &str = "cut";

fn app(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka.sh");
    let output = Command::new(script)
        .args(["run", "TruncationCheck"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "TruncationCheck {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Cuts the partition's only segment after its first `keep` batches, as a crash that lost the
/// rest of the page cache would.
fn cut_after(data_dir: &Path, keep: usize) {
    let segment = data_dir
        .join(format!("{TOPIC}-0"))
        .join("00000000000000000000.log");
    let bytes = std::fs::read(&segment).unwrap();
    let kept: usize = EntryIter::new(&bytes)
        .take(keep)
        .map(|entry| entry.unwrap().1.size_in_bytes())
        .sum();
    assert!(
        kept < bytes.len(),
        "there is something after batch {keep} to lose"
    );
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap();
    file.set_len(kept as u64).unwrap();
}

/// The steps against one broker, `restart` killing it, cutting its log and starting it again;
/// what the two consumers print after.
fn scenario(bootstrap: &str, port: u16, restart: impl FnOnce()) -> (String, String) {
    app(&["produce", bootstrap, TOPIC, "old", "20"]);
    for group in ["resets", "none"] {
        let read = app(&["consume", bootstrap, TOPIC, group, "20", "earliest"]);
        assert_eq!(read.lines().count(), 20, "{read}");
    }
    restart();
    wait_until_serving(port, &[(TOPIC.to_owned(), 1)], &["resets", "none"]);
    app(&["produce", bootstrap, TOPIC, "new", "5"]);
    let resets = app(&["consume", bootstrap, TOPIC, "resets", "5", "earliest"]);
    let none = app(&["consume", bootstrap, TOPIC, "none", "5", "none"]);
    (resets, none)
}

#[test]
fn a_consumer_goes_back_to_where_a_cut_log_ends_as_on_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();

    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, &[]);
    let bootstrap = kafka.bootstrap();
    let port = kafka.port;
    let on_kafka = scenario(&bootstrap, port, || {
        kafka.kill();
        cut_after(&kafka_dir, 10);
        kafka.restart();
    });
    drop(kafka);

    let ferrolog_dir = temp.path().join("ferrolog");
    std::fs::create_dir_all(&ferrolog_dir).unwrap();
    let port = free_port();
    let bootstrap = format!("127.0.0.1:{port}");
    let server = Server::start_on(port, &[], &ferrolog_dir, &[], "warn");
    let mut restarted = None;
    let on_ferrolog = scenario(&bootstrap, port, || {
        server.kill();
        cut_after(&ferrolog_dir, 10);
        restarted = Some(Server::start_on(port, &[], &ferrolog_dir, &[], "warn"));
    });
    drop(restarted);

    let expected_resets: String = (0..5).map(|i| format!("R {} new-{i}\n", 10 + i)).collect();
    assert_eq!(
        on_kafka.0, expected_resets,
        "Kafka: back to the cut, not to the earliest"
    );
    assert_eq!(on_kafka.1, "truncated 10\n", "Kafka: no reset policy");
    assert_eq!(on_ferrolog, on_kafka, "ferrolog (left) and Kafka (right)");
}
