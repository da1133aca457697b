//! A data directory in which Apache Kafka 4.4 holds transactions (committed, aborted, one left
//! open, one committed after the open one began), written by librdkafka's transactional
//! producer, opened by ferrolog: a `read_committed` Fetch (records up to the last stable
//! offset, the aborted transactions, the last stable offset itself), a `read_uncommitted` one
//! and ListOffsets' latest under both isolation levels answer as Kafka answered, after a clean
//! stop and after a SIGKILL, and DescribeProducers lists the same producers. Kafka's `.txnindex` files stay as they were after a clean stop, and
//! after the SIGKILL the index ferrolog's recovery rebuilds equals the one Kafka's recovery
//! rebuilt, byte for byte. Kafka's own `__transaction_state` records decode with ferrolog's
//! codec and re-encode to the same bytes, and ferrolog's coordinator reads them: the
//! transaction Kafka left open ends when its producer starts again. The same traffic written
//! into ferrolog leaves Kafka's `.txnindex` bytes and the same markers.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use common::answers::wait_until_serving;
use common::kafka::{KafkaPeer, kafka_available};
use common::wire::{connect, latest_offsets, name, send};
use common::{Server, copy_dir};
use common::{python_with_confluent_kafka, run_script};
use ferrolog_records::transaction_state::{self, TxnLogValue};
use ferrolog_records::{EntryIter, FileEntry};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, DescribeProducersRequest, DescribeProducersResponse, FetchRequest,
    FetchResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerId, TopicName,
    TransactionalId,
};

const TOPIC: &str = "history";

/// One partition for each coordinator's topic, on both brokers.
const SMALL_INTERNAL_TOPICS: &[&str] = &[
    "transaction.state.log.num.partitions=1",
    "offsets.topic.num.partitions=1",
];

/// What a Fetch from offset 0 at one isolation level answers.
#[derive(Debug, PartialEq, Eq)]
struct Read {
    error: i16,
    high_watermark: i64,
    last_stable_offset: i64,
    log_start_offset: i64,
    /// (producer id, first offset) of each aborted transaction; `None` when the field is null.
    aborted: Option<Vec<(i64, i64)>>,
    records: Vec<u8>,
}

#[derive(Debug, PartialEq, Eq)]
struct Answers {
    committed: Read,
    uncommitted: Read,
    /// ListOffsets latest: (read_uncommitted, read_committed).
    latest: (i64, i64),
    /// DescribeProducers: (producer id, epoch, last sequence, last timestamp, coordinator
    /// epoch, current transaction start offset) of each active producer, by producer id.
    producers: Vec<(i64, i32, i32, i64, i32, i64)>,
}

fn producers(stream: &mut TcpStream) -> Vec<(i64, i32, i32, i64, i32, i64)> {
    let request = DescribeProducersRequest::default().with_topics(vec![
        TopicRequest::default()
            .with_name(TopicName(name(TOPIC)))
            .with_partition_indexes(vec![0]),
    ]);
    let answer: DescribeProducersResponse =
        send(stream, ApiKey::DescribeProducers, 0, &request).unwrap();
    let partition = &answer.topics[0].partitions[0];
    assert_eq!(partition.error_code, 0);
    let mut found: Vec<_> = partition
        .active_producers
        .iter()
        .map(|p| {
            (
                p.producer_id.0,
                p.producer_epoch,
                p.last_sequence,
                p.last_timestamp,
                p.coordinator_epoch,
                p.current_txn_start_offset,
            )
        })
        .collect();
    found.sort_unstable();
    found
}

fn read(stream: &mut TcpStream, isolation_level: i8) -> Read {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_isolation_level(isolation_level)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(name(TOPIC)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let answer: FetchResponse = send(stream, ApiKey::Fetch, 12, &request).unwrap();
    let partition = &answer.responses[0].partitions[0];
    Read {
        error: partition.error_code,
        high_watermark: partition.high_watermark,
        last_stable_offset: partition.last_stable_offset,
        log_start_offset: partition.log_start_offset,
        aborted: partition.aborted_transactions.as_ref().map(|aborted| {
            aborted
                .iter()
                .map(|txn| (txn.producer_id.0, txn.first_offset))
                .collect()
        }),
        records: partition
            .records
            .as_ref()
            .map(|records| records.to_vec())
            .unwrap_or_default(),
    }
}

fn latest(stream: &mut TcpStream, isolation_level: i8) -> i64 {
    latest_offsets(stream, TOPIC, 1, isolation_level).unwrap()[0]
}

fn answers(port: u16) -> Answers {
    let mut stream = connect(port);
    Answers {
        committed: read(&mut stream, 1),
        uncommitted: read(&mut stream, 0),
        latest: (latest(&mut stream, 0), latest(&mut stream, 1)),
        producers: producers(&mut stream),
    }
}

/// The values of the data records in `records`, in order.
fn values(records: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    for entry in EntryIter::new(records) {
        let (_, FileEntry::V2(batch)) = entry.unwrap() else {
            panic!("a batch older than v2");
        };
        if batch.is_control() {
            continue;
        }
        let records = batch.records(1 << 20).unwrap();
        for record in records.iter() {
            let value = record.unwrap().value.unwrap();
            found.push(String::from_utf8(value.to_vec()).unwrap());
        }
    }
    found
}

/// A marker as its file holds it: offset, producer id, producer epoch, and the control record's
/// key and value bytes (its timestamp aside).
type Marker = (i64, i64, i16, Vec<u8>, Vec<u8>);

/// The transaction markers of the partition, in offset order.
fn markers_in(dir: &Path) -> Vec<Marker> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir.join(format!("{TOPIC}-0")))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut markers = Vec::new();
    for log in logs {
        let bytes = std::fs::read(&log).unwrap();
        for entry in EntryIter::new(&bytes) {
            let (_, FileEntry::V2(batch)) = entry.unwrap() else {
                continue;
            };
            if !batch.is_control() {
                continue;
            }
            let records = batch.records(1 << 20).unwrap();
            for record in records.iter() {
                let record = record.unwrap();
                markers.push((
                    batch.base_offset(),
                    batch.producer_id(),
                    batch.producer_epoch(),
                    record.key.unwrap().to_vec(),
                    record.value.unwrap().to_vec(),
                ));
            }
        }
    }
    markers
}

/// The partition's `.txnindex` files, by name.
fn txn_indexes(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir.join(format!("{TOPIC}-0")))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txnindex"))
        .map(|path| {
            (
                path.file_name().unwrap().into(),
                std::fs::read(&path).unwrap(),
            )
        })
        .collect()
}

/// ferrolog serves `copy` and answers as Kafka did; returns the `.txnindex` files it left.
fn ferrolog_answers(copy: &Path, expected: &Answers, when: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    let server = Server::start(copy);
    let answered = answers(server.port);
    let log = server.stderr();
    server.stop();
    assert!(
        !log.contains("ERROR"),
        "{when}: ferrolog opened Kafka's directory without an error:\n{log}"
    );
    assert_eq!(
        &answered, expected,
        "{when}: ferrolog (left) and Kafka (right)"
    );
    txn_indexes(copy)
}

/// ferrolog's coordinator, on Kafka's `__transaction_state` (one partition here, where
/// ferrolog's default is 50: the topic's own count places the ids), knows the transaction Kafka
/// left open: a new producer with its id fences it and aborts it (the first InitProducerId is
/// answered CONCURRENT_TRANSACTIONS, the next gets the epoch after the fencing one), and the
/// partition's last stable offset reaches its high watermark.
fn the_open_transaction_ends_when_its_producer_starts_again(copy: &Path, before: &Answers) {
    let server = Server::start(copy);
    let mut stream = connect(server.port);
    let init = |stream: &mut TcpStream| -> InitProducerIdResponse {
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(name("history-open"))))
            .with_transaction_timeout_ms(60_000)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        send(stream, ApiKey::InitProducerId, 4, &request).unwrap()
    };
    let open_producer = before
        .producers
        .iter()
        .find(|p| p.5 >= 0)
        .map(|p| (p.0, p.1))
        .unwrap();
    let fenced = init(&mut stream);
    assert_eq!(fenced.error_code, 51, "CONCURRENT_TRANSACTIONS: {fenced:?}");
    let started = init(&mut stream);
    assert_eq!(started.error_code, 0, "{started:?}");
    assert_eq!(
        (started.producer_id.0, i32::from(started.producer_epoch)),
        (open_producer.0, open_producer.1 + 2),
        "the fencing epoch, then the new producer's"
    );
    assert_eq!(
        latest(&mut stream, 1),
        latest(&mut stream, 0),
        "the last stable offset reaches the high watermark"
    );
    server.stop();
}

/// Kafka's `__transaction_state` records decode with ferrolog's codec, re-encode to the same
/// bytes, and say what happened to each transactional id.
fn coordinator_state_reads_as_kafka_wrote_it(kafka_dir: &Path) {
    let dir = kafka_dir.join("__transaction_state-0");
    let mut latest: BTreeMap<String, TxnLogValue> = BTreeMap::new();
    let mut values = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for entry in EntryIter::new(&bytes) {
            let (_, FileEntry::V2(batch)) = entry.unwrap() else {
                panic!("a batch older than v2 in {}", path.display());
            };
            for record in batch.records(1 << 20).unwrap().iter() {
                let record = record.unwrap();
                let id = transaction_state::decode_key(record.key.unwrap()).unwrap();
                let Some(value) = record.value else {
                    latest.remove(&id);
                    continue;
                };
                let decoded = TxnLogValue::decode(value).unwrap();
                let version = i16::from_be_bytes([value[0], value[1]]);
                assert_eq!(
                    decoded.encode(version).unwrap(),
                    value,
                    "{id}: re-encoded as Kafka wrote it"
                );
                values += 1;
                latest.insert(id, decoded);
            }
        }
    }
    assert!(values >= 8, "every transition is a record: {values}");
    let states: BTreeMap<&str, &str> = latest
        .iter()
        .map(|(id, value)| (id.as_str(), value.status.name()))
        .collect();
    assert_eq!(
        states,
        BTreeMap::from([
            ("history-aborted", "CompleteAbort"),
            ("history-committed", "CompleteCommit"),
            ("history-later", "CompleteCommit"),
            ("history-open", "Ongoing"),
        ])
    );
    assert_eq!(
        latest["history-open"].partitions,
        Some(vec![(TOPIC.to_owned(), vec![0])])
    );
}

#[test]
fn a_kafka_data_dir_with_transactions_answers_read_committed_as_kafka() {
    if !kafka_available() {
        return;
    }
    let Some(python) = python_with_confluent_kafka() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let mut kafka = KafkaPeer::start(&kafka_dir, SMALL_INTERNAL_TOPICS);
    let written = run_script(&python, "transactional_history.py", kafka.port, &[TOPIC]);
    assert_eq!(written.trim(), "ok");
    let clean = answers(kafka.port);
    // What Kafka answers is worth comparing: an open transaction holds the last stable offset
    // below the high watermark, committed reads stop there and list the aborted transaction,
    // uncommitted ones list none.
    assert!(
        clean.committed.last_stable_offset < clean.committed.high_watermark,
        "{clean:?}"
    );
    assert_eq!(
        clean.latest,
        (
            clean.committed.high_watermark,
            clean.committed.last_stable_offset
        )
    );
    assert_eq!(clean.committed.aborted.as_ref().map(Vec::len), Some(1));
    assert_eq!(clean.uncommitted.aborted, None);
    // The four transactional producers (the plain one, librdkafka's default, has no producer
    // id); only the one left open has a transaction start.
    assert_eq!(clean.producers.len(), 4, "{:?}", clean.producers);
    let open: Vec<i64> = clean
        .producers
        .iter()
        .map(|p| p.5)
        .filter(|start| *start >= 0)
        .collect();
    assert_eq!(open, [clean.committed.last_stable_offset]);
    assert_eq!(
        values(&clean.committed.records),
        [
            "committed-1",
            "committed-2",
            "committed-3",
            "aborted-1",
            "aborted-2",
            "plain-1"
        ]
    );
    assert_eq!(
        values(&clean.uncommitted.records).len(),
        10,
        "every record, the open and later transactions' included"
    );
    kafka.stop();
    coordinator_state_reads_as_kafka_wrote_it(&kafka_dir);
    let kafka_indexes = txn_indexes(&kafka_dir);
    assert_eq!(kafka_indexes.values().map(Vec::len).sum::<usize>(), 34);
    // The same traffic written into ferrolog leaves the same transaction index, byte for byte,
    // and the same markers.
    let ferrolog_dir = temp.path().join("ferrolog-history");
    let server = Server::start_with(&ferrolog_dir, SMALL_INTERNAL_TOPICS);
    let written = run_script(&python, "transactional_history.py", server.port, &[TOPIC]);
    assert_eq!(written.trim(), "ok");
    server.stop();
    assert_eq!(
        txn_indexes(&ferrolog_dir),
        kafka_indexes,
        "the .txnindex ferrolog wrote (left) and Kafka's (right)"
    );
    // Their offsets may differ: Kafka writes a transaction's markers after answering its
    // EndTxn, so a record the script writes next may land before them (docs/operations.md).
    let without_offsets = |markers: Vec<Marker>| {
        markers
            .into_iter()
            .map(|(_, producer, epoch, key, value)| (producer, epoch, key, value))
            .collect::<Vec<_>>()
    };
    let kafka_markers = without_offsets(markers_in(&kafka_dir));
    assert_eq!(kafka_markers.len(), 3, "{kafka_markers:?}");
    assert_eq!(without_offsets(markers_in(&ferrolog_dir)), kafka_markers);
    let copy = temp.path().join("after-clean-stop");
    copy_dir(&kafka_dir, &copy);
    let left = ferrolog_answers(&copy, &clean, "clean stop");
    assert_eq!(left, kafka_indexes, "Kafka's .txnindex is left as it was");
    the_open_transaction_ends_when_its_producer_starts_again(&copy, &clean);

    // SIGKILL: both recover the partition, and rebuild its transaction index.
    kafka.restart();
    wait_until_serving(kafka.port, &[(TOPIC.to_owned(), 1)], &[]);
    kafka.kill();
    let killed = temp.path().join("after-sigkill");
    copy_dir(&kafka_dir, &killed);
    kafka.restart();
    wait_until_serving(kafka.port, &[(TOPIC.to_owned(), 1)], &[]);
    let recovered = answers(kafka.port);
    kafka.stop();
    assert_eq!(recovered, clean, "Kafka after its recovery");
    // ferrolog must rebuild the index itself: the copy has none.
    for name in txn_indexes(&killed).keys() {
        std::fs::remove_file(killed.join(format!("{TOPIC}-0")).join(name)).unwrap();
    }
    let rebuilt = ferrolog_answers(&killed, &recovered, "SIGKILL");
    assert_eq!(
        rebuilt,
        txn_indexes(&kafka_dir),
        "the .txnindex ferrolog's recovery rebuilt is Kafka's"
    );
}
