//! confluent-kafka (librdkafka, `group.protocol=consumer`) and franz-go (its server-side
//! balancer) as members of Kafka 4 consumer groups (KIP-848), against `ferrolog serve` and
//! against Kafka 4.4: the churn of tests/churn with each client, one server assignor each, and
//! the same outcome on both brokers (every record processed, again only after the SIGKILLed
//! member, offsets committed to the end, the group stable with two members).

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod churn;
mod common;

use churn::{Client, GROUP_SETTINGS, Outcome, run};
use common::kafka::{KafkaPeer, go_clients, kafka_available};
use common::{Server, python_with_confluent_kafka};

#[test]
fn confluent_kafka_and_franz_go_members_churn_alike_on_ferrolog_and_kafka() {
    if !kafka_available() {
        return;
    }
    let (Some(python), Some(runner)) = (python_with_confluent_kafka(), go_clients()) else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let server = Server::start_with(&temp.path().join("ferrolog"), GROUP_SETTINGS);
    let kafka = KafkaPeer::start(&temp.path().join("kafka"), GROUP_SETTINGS);
    let bootstrap = format!("127.0.0.1:{}", server.port);
    for (client, assignor) in [
        (Client::ConfluentKafka(python), "uniform"),
        (Client::FranzGo(runner), "range"),
    ] {
        let ours = run(&bootstrap, &client, assignor);
        let theirs = run(&kafka.bootstrap(), &client, assignor);
        let expected = Outcome::expected(&client, assignor);
        assert_eq!(theirs, expected, "Kafka 4.4, {assignor}:\n{}", kafka.log());
        assert_eq!(ours, expected, "ferrolog, {assignor}:\n{}", server.stderr());
    }
}
