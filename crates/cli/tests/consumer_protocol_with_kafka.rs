//! Kafka 4.4's Java consumer with `group.protocol=consumer` (KIP-848) against `ferrolog serve`
//! and against Kafka 4.4, the same churn on both (tests/churn): while a producer writes,
//! consumers join one after another (one of them static), one is SIGKILLed and its static
//! instance comes back after its session, one leaves; with each server assignor. Afterwards,
//! on both brokers: every record was processed, a record was processed twice only if the
//! killed consumer had processed it (it could not commit), the committed offsets are the end
//! offsets, and `kafka-consumer-groups --describe --state` prints the same state, assignor and
//! member count.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod churn;
mod common;

use churn::{Client, GROUP_SETTINGS, Outcome, run};
use common::Server;
use common::kafka::{KafkaPeer, kafka_available};

#[test]
fn java_consumers_of_the_consumer_protocol_churn_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&temp.path().join("ferrolog"), GROUP_SETTINGS);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), GROUP_SETTINGS);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    for assignor in ["uniform", "range"] {
        let ours = run(&bootstrap, &Client::Java, assignor);
        let theirs = run(&kafka.bootstrap(), &Client::Java, assignor);
        let expected = Outcome::expected(&Client::Java, assignor);
        assert_eq!(
            theirs,
            expected,
            "Kafka 4.4 with {assignor}:\n{}",
            kafka.log()
        );
        assert_eq!(
            ours,
            expected,
            "ferrolog with {assignor}:\n{}",
            server.stderr()
        );
    }
}
