//! Kafka 4.4's `kafka-acls` against `ferrolog serve` and against a Kafka 4.4 broker beside it,
//! both with Kafka's `StandardAuthorizer` configured: adding (allow, deny, prefixed, the
//! `--producer` shorthand), listing (all, and the ACLs matching one topic), removing, the ACLs
//! kept across a restart of each, what Kafka's own tools and Java producer meet when an ACL
//! denies them, and ferrolog's ACLs moved into a new Kafka cluster by `move-to-kafka`. Then every API the broker serves, asked by a client without the ACL Kafka
//! checks and with it: ferrolog answers as Kafka 4.4 answers, error code for error code.
//! Every connection is `User:ANONYMOUS`; the ACLs tell the administrator (127.0.0.1) from the
//! client under test (127.0.0.2) by host.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::kafka::{KafkaPeer, kafka_available, kafka_tool};
use common::{Server, wire};
use ferrolog_broker::dispatch::SUPPORTED;
use ferrolog_broker::probes;
use kafka_protocol::messages::{ApiKey, DescribeAclsResponse, ResponseHeader};
use kafka_protocol::protocol::Decodable;

const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
const TOPIC: &str = "orders";
const GROUP: &str = "billing";
const ADMIN_HOST: &str = "127.0.0.1";
const CLIENT_HOST: &str = "127.0.0.2";
const AUTHORIZER: [&str; 2] = [
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    // No CLUSTER ACL exists at first: this lets the first kafka-acls call in, as an operator
    // bootstraps a cluster whose clients are all anonymous.
    "allow.everyone.if.no.acl.found=true",
];

/// Runs `class` with `args` against `bootstrap`; its exit status, stdout and stderr.
fn run(class: &str, bootstrap: &str, args: &[&str], stdin: &[u8]) -> (bool, String, String) {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    let output = kafka_tool(class, &all, stdin);
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `kafka-acls` with `args` against both; both must succeed with the same output, compared
/// line by line in sorted order when `sorted` (listings come in no set order). Returns it.
fn same_acls(kafka: &str, ferrolog: &str, args: &[&str], sorted: bool) -> String {
    let outputs: Vec<String> = [kafka, ferrolog]
        .iter()
        .map(|bootstrap| {
            let (ok, stdout, stderr) = run(ACLS, bootstrap, args, b"");
            assert!(
                ok,
                "kafka-acls {args:?} against {bootstrap}:\n{stdout}{stderr}"
            );
            if sorted {
                let mut lines: Vec<&str> = stdout.lines().collect();
                lines.sort_unstable();
                lines.join("\n")
            } else {
                stdout
            }
        })
        .collect();
    assert_eq!(
        outputs[1], outputs[0],
        "kafka-acls {args:?}: ferrolog (left) and Kafka (right)"
    );
    outputs[0].clone()
}

#[test]
fn kafka_acls_answers_the_same_against_ferrolog() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let ferrolog_dir = temp.path().join("ferrolog");
    let mut kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &AUTHORIZER);
    let server = Server::start_with(&ferrolog_dir, &AUTHORIZER);
    let kafka_address = kafka.bootstrap();
    let ferrolog_address = format!("127.0.0.1:{}", server.port);
    // Each command is written on one line, its arguments separated by spaces.
    let same = |command: &str, sorted| {
        let args: Vec<&str> = command.split_whitespace().collect();
        same_acls(&kafka_address, &ferrolog_address, &args, sorted)
    };

    let added = same(
        "--add --allow-principal User:ANONYMOUS --allow-host 127.0.0.1 --operation All --cluster",
        false,
    );
    assert!(
        added.contains("resourceType=CLUSTER, name=kafka-cluster"),
        "{added}"
    );
    same(
        "--add --allow-principal User:alice --operation Read --operation Write --topic orders- --resource-pattern-type prefixed",
        false,
    );
    same(
        "--add --deny-principal User:mallory --operation All --group billing",
        false,
    );
    same(
        "--add --allow-principal User:bob --producer --topic t1",
        false,
    );
    let listed = same("--list", true);
    for expected in [
        "principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW",
        "principal=User:mallory, host=*, operation=ALL, permissionType=DENY",
        "principal=User:bob, host=*, operation=CREATE, permissionType=ALLOW",
    ] {
        assert!(
            listed.contains(expected),
            "{expected} missing from\n{listed}"
        );
    }
    // The ACLs that would apply to one topic: the prefixed one only.
    let matching = same(
        "--list --topic orders-eu --resource-pattern-type match",
        true,
    );
    assert!(
        matching.contains("name=orders-, patternType=PREFIXED"),
        "{matching}"
    );
    assert!(!matching.contains("name=t1"), "{matching}");
    same(
        "--remove --force --deny-principal User:mallory --operation All --group billing",
        false,
    );

    // A DENY for this host on one topic. CREATE on the cluster (ALL, above) still lets the
    // topic be created, as Kafka allows; describing it, and producing to it, are refused.
    same(
        "--add --deny-principal User:ANONYMOUS --deny-host 127.0.0.1 --operation All --topic secret",
        false,
    );
    for bootstrap in [&kafka_address, &ferrolog_address] {
        let (created, stdout, stderr) =
            run(TOPICS, bootstrap, &["--create", "--topic", "secret"], b"");
        assert!(created, "{bootstrap}: {stdout}{stderr}");
        let (_, listed, _) = run(TOPICS, bootstrap, &["--list"], b"");
        assert!(!listed.contains("secret"), "{bootstrap}: {listed}");
        let (_, stdout, stderr) = run(
            PRODUCER,
            bootstrap,
            &[
                "--topic",
                "secret",
                "--producer-property",
                "max.block.ms=10000",
            ],
            b"denied\n",
        );
        assert!(
            stderr
                .contains("TopicAuthorizationException: Not authorized to access topics: [secret]"),
            "{bootstrap}: {stdout}{stderr}"
        );
    }

    // Both keep their ACLs across a restart.
    let before = same("--list", true);
    server.stop();
    kafka.stop();
    kafka.restart();
    let server = Server::start_with(&ferrolog_dir, &AUTHORIZER);
    let ferrolog_address = format!("127.0.0.1:{}", server.port);
    let after = same_acls(&kafka_address, &ferrolog_address, &["--list"], true);
    assert_eq!(after, before);

    // Moved to a new Kafka cluster, ferrolog's ACLs are Kafka's: the same listing. A cluster
    // without an authorizer (here a second ferrolog, which answers as Kafka does) cannot take
    // them: the move stops and says so, unless told to leave them behind.
    server.stop();
    drop(kafka);
    let create_topics = |bootstrap: &str, extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_ferrolog"))
            .args(["move-to-kafka", "create-topics", "--log-dirs"])
            .arg(&ferrolog_dir)
            .args(["--bootstrap-server", bootstrap])
            .args(extra)
            .output()
            .unwrap()
    };
    let unsecured = Server::start(&temp.path().join("unsecured"));
    let unsecured_address = format!("127.0.0.1:{}", unsecured.port);
    let refused = create_topics(&unsecured_address, &[]);
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && said.contains("no authorizer"),
        "{said}"
    );
    let left = create_topics(&unsecured_address, &["--without-acls"]);
    let said = String::from_utf8_lossy(&left.stdout);
    assert!(
        left.status.success() && said.contains("left behind"),
        "{said}"
    );
    unsecured.stop();
    let target = KafkaPeer::start(&temp.path().join("target").join("data"), &AUTHORIZER);
    let moved = create_topics(&target.bootstrap(), &[]);
    let said = String::from_utf8_lossy(&moved.stdout);
    assert!(
        moved.status.success() && said.contains("ACLs in Kafka"),
        "{said}{}",
        String::from_utf8_lossy(&moved.stderr)
    );
    let (ok, listed, stderr) = run(ACLS, &target.bootstrap(), &["--list"], b"");
    assert!(ok, "{stderr}");
    let mut lines: Vec<&str> = listed.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines.join("\n"), before);
}

/// The error codes each probe's answer carries, API by API.
fn probe_answers(port: u16) -> BTreeMap<String, Vec<i16>> {
    let mut stream = wire::connect_from(CLIENT_HOST, port).unwrap();
    let mut answers = BTreeMap::new();
    let topic_id = wire::topic_id(port, TOPIC);
    // In key order ShareFetch's probe (epoch 0) opens the share session ShareAcknowledge's
    // names: Kafka checks the session before the topics.
    for (api, _, _) in SUPPORTED {
        let Some(probe) = probes::probe(*api, TOPIC, GROUP, topic_id) else {
            continue;
        };
        let framed = wire::frame_body(*api, probe.version, &probe.body);
        let mut answer = wire::exchange(&mut stream, &framed)
            .unwrap_or_else(|| panic!("{api:?}: the broker on {port} closed the connection"));
        ResponseHeader::decode(&mut answer, api.response_header_version(probe.version)).unwrap();
        answers.insert(format!("{api:?}"), probe.answer_codes(answer).unwrap());
    }
    answers
}

/// Waits (a minute at most) until the broker on `port` lists `count` ACLs: Kafka applies ACLs
/// from its metadata log, a moment after CreateAcls answers.
fn wait_for_acls(port: u16, count: usize) {
    let mut stream = wire::connect(port);
    let started = Instant::now();
    loop {
        let listed: DescribeAclsResponse = wire::send(
            &mut stream,
            ApiKey::DescribeAcls,
            3,
            &probes::match_any_acl(),
        )
        .unwrap();
        let total: usize = listed.resources.iter().map(|r| r.acls.len()).sum();
        if total == count {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the broker on {port} lists {total} ACLs, not {count}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Adds ACLs for `User:ANONYMOUS` with kafka-acls against both brokers; `args` (after the
/// principal) are separated by spaces.
fn add_acl(brokers: [&str; 2], args: &str) {
    for bootstrap in brokers {
        let mut all = vec!["--add", "--allow-principal", "User:ANONYMOUS"];
        all.extend(args.split_whitespace());
        let (ok, stdout, stderr) = run(ACLS, bootstrap, &all, b"");
        assert!(
            ok,
            "kafka-acls {all:?} against {bootstrap}:\n{stdout}{stderr}"
        );
    }
}

#[test]
fn every_api_is_authorized_as_kafka_authorizes_it() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &AUTHORIZER);
    let server = Server::start_with(&temp.path().join("ferrolog"), &AUTHORIZER);
    let kafka_address = kafka.bootstrap();
    let ferrolog_address = format!("127.0.0.1:{}", server.port);
    let brokers = [kafka_address.as_str(), ferrolog_address.as_str()];
    let ports = [kafka.port, server.port];

    // The administrator (127.0.0.1, which Kafka's own broker-to-controller traffic also comes
    // from) may do everything; every resource now has an ACL, so the client (127.0.0.2) may do
    // nothing.
    add_acl(
        brokers,
        &format!("--allow-host {ADMIN_HOST} --operation All --cluster"),
    );
    add_acl(
        brokers,
        &format!("--allow-host {ADMIN_HOST} --operation All --topic *"),
    );
    add_acl(
        brokers,
        &format!("--allow-host {ADMIN_HOST} --operation All --group *"),
    );
    add_acl(
        brokers,
        &format!("--allow-host {ADMIN_HOST} --operation All --transactional-id *"),
    );
    for bootstrap in brokers {
        for topic in [TOPIC.to_owned(), probes::doomed_topic(TOPIC)] {
            let (ok, stdout, stderr) =
                run(TOPICS, bootstrap, &["--create", "--topic", &topic], b"");
            assert!(ok, "{bootstrap}: {stdout}{stderr}");
        }
    }
    for port in ports {
        wait_for_acls(port, 4);
    }
    let kafka_refusals = probe_answers(kafka.port);
    assert_eq!(
        probe_answers(server.port),
        kafka_refusals,
        "without ACLs: ferrolog (left) and Kafka (right)"
    );
    for (api, codes) in &kafka_refusals {
        assert!(
            codes.iter().any(|code| [29, 30, 31, 53].contains(code)),
            "Kafka did not refuse {api}: {codes:?}"
        );
    }

    // The client may do what each probe needs: neither refuses it now. (What they answer
    // beyond authorization is compared by the other tests; a Kafka broker whose offsets topic
    // the probes just created answers the group APIs NOT_COORDINATOR for a moment.)
    // The probes name the group's id as their transactional id too.
    // The probes of the share groups' offset APIs name a group of their own.
    let share_group = probes::share_group_of(GROUP);
    for (resource, name) in [
        ("--topic", TOPIC),
        ("--group", GROUP),
        ("--group", share_group.as_str()),
        ("--transactional-id", GROUP),
    ] {
        add_acl(
            brokers,
            &format!("--allow-host {CLIENT_HOST} --operation All {resource} {name}"),
        );
    }
    add_acl(
        brokers,
        &format!(
            "--allow-host {CLIENT_HOST} --operation All --topic {TOPIC}- --resource-pattern-type prefixed"
        ),
    );
    add_acl(
        brokers,
        &format!("--allow-host {CLIENT_HOST} --operation All --cluster"),
    );
    for port in ports {
        wait_for_acls(port, 10);
    }
    for port in ports {
        for (api, codes) in probe_answers(port) {
            assert!(
                !codes.iter().any(|code| [29, 30, 31, 53].contains(code)),
                "the broker on {port} refused {api} with its ACLs: {codes:?}"
            );
        }
    }
}
