//! Apache Kafka 4.4's own command-line tools against `ferrolog serve`, each run the same way
//! against a Kafka 4.4 broker beside it, with outputs compared once what must differ (topic
//! ids, data directory paths) is masked: kafka-topics (create, list, describe, alter
//! partitions, delete), kafka-configs (describe and alter a topic's configs, describe the
//! broker's), the console producer and consumer, kafka-consumer-groups (list, describe with
//! lag, reset offsets, delete), kafka-get-offsets, kafka-delete-records, kafka-log-dirs and
//! kafka-broker-api-versions; and Kafka's correctness tools kafka-verifiable-producer and
//! kafka-verifiable-consumer against ferrolog. The Go clients franz-go and sarama run one
//! scenario each (admin, every codec, a consumer group, committed offsets) against both.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::process::Output;

use common::Server;
use common::kafka::{
    KafkaPeer, LISTED_BY_KAFKA_ONLY, go_clients, kafka_available, kafka_tool, kafka_tool_ok,
    listed_apis,
};

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const GROUPS: &str = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";

/// The two brokers, by bootstrap address.
struct Brokers {
    kafka: String,
    ferrolog: String,
}

/// What a tool printed, with what may differ between two brokers masked: topic ids, the data
/// directory's path, log sizes, and a difference docs/operations.md names: Kafka 4.4 sets
/// `min.insync.replicas=1` for the cluster (a single ferrolog node has no replicas to count).
fn normalized(output: &Output, data_dirs: &[&str]) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    for dir in data_dirs {
        text = text.replace(dir, "<data dir>");
    }
    text = text
        .replace("Configs: min.insync.replicas=1,", "Configs: ")
        .replace("Configs: min.insync.replicas=1\n", "Configs: \n");
    // A log's size in bytes depends on how the producer happened to batch the records.
    let mut masked = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\"size\":") {
        masked.push_str(&rest[..at + 7]);
        rest = rest[at + 7..].trim_start_matches(|c: char| c.is_ascii_digit());
        masked.push_str("<n>");
    }
    masked.push_str(rest);
    masked
        .split('\t')
        .map(|field| match field.strip_prefix("TopicId: ") {
            Some(_) => "TopicId: <id>",
            None => field,
        })
        .collect::<Vec<_>>()
        .join("\t")
}

impl Brokers {
    /// Runs `class` with `args` (after `--bootstrap-server <broker>`) against both brokers and
    /// checks both succeed with the same output; returns it.
    fn same(&self, class: &str, args: &[&str], stdin: &[u8], data_dirs: &[&str]) -> String {
        self.compare(class, args, stdin, data_dirs, |text| text)
    }

    /// As [`Brokers::same`], for tools whose lines come in no set order (records of several
    /// partitions): the lines are compared sorted.
    fn same_lines(&self, class: &str, args: &[&str], stdin: &[u8], data_dirs: &[&str]) -> String {
        self.compare(class, args, stdin, data_dirs, |text| {
            sorted_lines(&text).join("\n")
        })
    }

    fn compare(
        &self,
        class: &str,
        args: &[&str],
        stdin: &[u8],
        data_dirs: &[&str],
        arrange: impl Fn(String) -> String,
    ) -> String {
        let run = |bootstrap: &str| {
            let mut all = vec!["--bootstrap-server", bootstrap];
            all.extend_from_slice(args);
            let output = kafka_tool(class, &all, stdin);
            assert!(
                output.status.success(),
                "{class} {args:?} against {bootstrap} failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            arrange(normalized(&output, data_dirs))
        };
        let kafka = run(&self.kafka);
        let ferrolog = run(&self.ferrolog);
        assert_eq!(
            ferrolog, kafka,
            "{class} {args:?}: ferrolog (left) and Kafka (right)"
        );
        kafka
    }
}

/// `kafka-features`: the features both brokers serve are described alike (but for the epoch,
/// which is each broker's own), and upgrades, downgrades, disabling and a refusal print the
/// same. The levels end as they began.
fn features_are_described_and_changed_alike(brokers: &Brokers) {
    const FEATURES: &str = "org.apache.kafka.tools.FeatureCommand";
    let describe = |bootstrap: &str| {
        let text = kafka_tool_ok(
            FEATURES,
            &["--bootstrap-server", bootstrap, "describe"],
            b"",
        );
        text.lines()
            .map(|line| {
                let name = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned();
                let without_epoch = line.split("Epoch:").next().unwrap_or_default().to_owned();
                (name, without_epoch)
            })
            .collect::<Vec<_>>()
    };
    let ours = describe(&brokers.ferrolog);
    let theirs = describe(&brokers.kafka);
    let served: Vec<&str> = ours.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        served,
        [
            "group.version",
            "share.version",
            "streams.version",
            "transaction.version"
        ]
    );
    for (name, line) in &ours {
        let kafka = theirs.iter().find(|(theirs, _)| theirs == name);
        let kafka = kafka.map(|(_, line)| line.clone()).unwrap_or_default();
        // A difference docs/operations.md names: share.version 2 (KIP-1191's dead-letter
        // queue) is not served, so ferrolog finalizes 1 where Kafka 4.4 finalizes 2.
        let kafka = if name == "share.version" {
            kafka
                .replace("SupportedMaxVersion: 2 ", "SupportedMaxVersion: 1 ")
                .replace("FinalizedVersionLevel: 2 ", "FinalizedVersionLevel: 1 ")
        } else {
            kafka
        };
        assert_eq!(line, &kafka, "{name}");
    }
    let same = |args: &[&str]| brokers.same(FEATURES, args, b"", &[]);
    for args in [
        ["downgrade", "--feature", "transaction.version=1"],
        ["disable", "--feature", "share.version"],
        ["upgrade", "--feature", "group.version=1"],
        ["upgrade", "--feature", "transaction.version=2"],
        ["upgrade", "--feature", "share.version=1"],
    ] {
        let printed = same(&args);
        assert!(
            printed.contains(args[2].split('=').next().unwrap()),
            "{printed}"
        );
    }
    let refused = |bootstrap: &str| {
        let args = [
            "--bootstrap-server",
            bootstrap,
            "upgrade",
            "--feature",
            "transaction.version=3",
        ];
        let output = kafka_tool(FEATURES, &args, b"");
        assert!(!output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let refusal = refused(&brokers.ferrolog);
    assert_eq!(refusal, refused(&brokers.kafka));
    assert!(refusal.contains("only supports versions 0-2"), "{refusal}");
    assert_eq!(describe(&brokers.ferrolog), ours, "the levels are back");
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn kafkas_tools_answer_the_same_against_ferrolog() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dir = temp.path().join("kafka").join("data");
    let ferrolog_dir = temp.path().join("ferrolog");
    let kafka = KafkaPeer::start(&kafka_dir, &[]);
    let server = Server::start(&ferrolog_dir);
    let brokers = Brokers {
        kafka: kafka.bootstrap(),
        ferrolog: format!("127.0.0.1:{}", server.port),
    };
    let dirs = [kafka_dir.to_str().unwrap(), ferrolog_dir.to_str().unwrap()];
    let same = |class: &str, args: &[&str]| brokers.same(class, args, b"", &dirs);

    // Topics.
    let created = same(
        TOPICS,
        &[
            "--create",
            "--topic",
            "tools",
            "--partitions",
            "3",
            "--config",
            "retention.ms=100000",
        ],
    );
    assert_eq!(created.trim(), "Created topic tools.");
    assert_eq!(
        same(TOPICS, &["--list", "--exclude-internal"]).trim(),
        "tools"
    );
    same(
        TOPICS,
        &["--alter", "--topic", "tools", "--partitions", "4"],
    );
    let described = same(TOPICS, &["--describe", "--topic", "tools"]);
    assert!(described.contains("PartitionCount: 4"), "{described}");

    // Configs.
    let describe_configs = [
        "--describe",
        "--entity-type",
        "topics",
        "--entity-name",
        "tools",
    ];
    let configs = same(CONFIGS, &describe_configs);
    assert!(configs.contains("retention.ms=100000"), "{configs}");
    same(
        CONFIGS,
        &[
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools",
            "--add-config",
            "retention.ms=200000",
        ],
    );
    let configs = same(CONFIGS, &describe_configs);
    assert!(configs.contains("retention.ms=200000"), "{configs}");
    same(
        CONFIGS,
        &[
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "0",
        ],
    );

    // Records in and out: keys pick the partitions, as the producer hashes them.
    let input: String = (0..100).map(|i| format!("k{i}:v{i}\n")).collect();
    brokers.same(
        "org.apache.kafka.tools.ConsoleProducer",
        &[
            "--topic",
            "tools",
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=:",
        ],
        input.as_bytes(),
        &dirs,
    );
    let consumed = brokers.same_lines(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--topic",
            "tools",
            "--group",
            "tools-group",
            "--from-beginning",
            "--max-messages",
            "100",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "print.partition=true",
        ],
        b"",
        &dirs,
    );
    assert_eq!(consumed.lines().count(), 100);
    let offsets = same(
        "org.apache.kafka.tools.GetOffsetShell",
        &["--topic", "tools"],
    );
    let total: i64 = offsets
        .lines()
        .map(|line| line.rsplit(':').next().unwrap().parse::<i64>().unwrap())
        .sum();
    assert_eq!(total, 100, "{offsets}");

    // Groups.
    assert_eq!(sorted_lines(&same(GROUPS, &["--list"])), ["tools-group"]);
    let lag = same(GROUPS, &["--describe", "--group", "tools-group"]);
    assert!(lag.contains("tools-group"), "{lag}");
    let reset = same(
        GROUPS,
        &[
            "--reset-offsets",
            "--group",
            "tools-group",
            "--topic",
            "tools",
            "--to-earliest",
            "--execute",
        ],
    );
    assert_eq!(
        reset
            .lines()
            .filter(|line| line.contains("tools-group"))
            .count(),
        4,
        "{reset}"
    );
    same(GROUPS, &["--describe", "--group", "tools-group"]);

    // DeleteRecords, then the log dirs.
    let plan = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        plan.path(),
        r#"{"partitions":[{"topic":"tools","partition":0,"offset":3}],"version":1}"#,
    )
    .unwrap();
    let deleted = same(
        "org.apache.kafka.tools.DeleteRecordsCommand",
        &["--offset-json-file", plan.path().to_str().unwrap()],
    );
    assert!(deleted.contains("low_watermark: 3"), "{deleted}");
    same(
        "org.apache.kafka.tools.GetOffsetShell",
        &["--topic", "tools", "--time", "-2"],
    );
    same(
        "org.apache.kafka.tools.LogDirsCommand",
        &["--describe", "--topic-list", "tools"],
    );

    // Leader elections: each partition's only replica leads it already, on both.
    const ELECTION: &str = "org.apache.kafka.tools.LeaderElectionCommand";
    let all = same(
        ELECTION,
        &["--election-type", "preferred", "--all-topic-partitions"],
    );
    assert_eq!(all, "", "nothing elected, nothing to say");
    let one = same(
        ELECTION,
        &[
            "--election-type",
            "preferred",
            "--topic",
            "tools",
            "--partition",
            "0",
        ],
    );
    assert_eq!(
        one.trim(),
        "Valid replica already elected for partitions tools-0"
    );
    same(
        ELECTION,
        &[
            "--election-type",
            "unclean",
            "--topic",
            "tools",
            "--partition",
            "1",
        ],
    );

    // The metadata quorum: one voter, leading, no observers, on both. ferrolog keeps no
    // metadata log: its high watermark is unknown, its voter has no controller endpoint.
    let quorum = |bootstrap: &str| {
        let status = kafka_tool_ok(
            "org.apache.kafka.tools.MetadataQuorumCommand",
            &["--bootstrap-server", bootstrap, "describe", "--status"],
            b"",
        );
        let labels: Vec<String> = status
            .lines()
            .filter_map(|line| line.split_once(':').map(|(label, _)| label.to_owned()))
            .collect();
        (status, labels)
    };
    let (ours, our_labels) = quorum(&brokers.ferrolog);
    let (theirs, their_labels) = quorum(&brokers.kafka);
    assert_eq!(our_labels, their_labels, "{ours}\n{theirs}");
    for line in [
        "LeaderId:               0",
        "LeaderEpoch:            1",
        "HighWatermark:          -1",
        "MaxFollowerLag:         0",
        "CurrentVoters:          [{\"id\": 0}]",
        "CurrentObservers:       []",
    ] {
        assert!(ours.contains(line), "{line} in\n{ours}");
    }
    for line in [
        "LeaderId:               0",
        "MaxFollowerLag:         0",
        "CurrentObservers:       []",
    ] {
        assert!(theirs.contains(line), "{line} in\n{theirs}");
    }

    // The resources configs can be set on: no client-metrics subscription on either; the
    // groups' configs listed through ListConfigResources and ListGroups.
    same("org.apache.kafka.tools.ClientMetricsCommand", &["--list"]);
    same(
        "org.apache.kafka.tools.ConfigCommand",
        &["--describe", "--entity-type", "groups"],
    );

    features_are_described_and_changed_alike(&brokers);

    // What ferrolog serves, each API at versions Kafka's own tool can use, and the APIs Kafka
    // lists that ferrolog does not, or lists that Kafka does not: exactly those
    // docs/operations.md names.
    let (versions, ours) = listed_apis(&brokers.ferrolog);
    let (_, theirs) = listed_apis(&brokers.kafka);
    for api in [
        "Produce",
        "Fetch",
        "Metadata",
        "CreateTopics",
        "OffsetFetch",
    ] {
        assert!(ours.contains(api), "{api}: {versions}");
    }
    let only_kafka: Vec<&String> = theirs.difference(&ours).collect();
    assert_eq!(only_kafka, LISTED_BY_KAFKA_ONLY);
    let only_ferrolog: Vec<&String> = ours.difference(&theirs).collect();
    assert_eq!(
        only_ferrolog,
        ["GetTelemetrySubscriptions", "PushTelemetry"]
    );

    same(GROUPS, &["--delete", "--group", "tools-group"]);
    same(TOPICS, &["--delete", "--topic", "tools"]);
    assert_eq!(same(TOPICS, &["--list", "--exclude-internal"]).trim(), "");
    drop(kafka);

    // Kafka's correctness tools: every record the verifiable producer had acknowledged is
    // read by the verifiable consumer, in its group, with its offsets committed. The topic is
    // created on first use with the broker's default of one partition, so offsets name records.
    let produced = kafka_tool_ok(
        "org.apache.kafka.tools.VerifiableProducer",
        &[
            "--bootstrap-server",
            &brokers.ferrolog,
            "--topic",
            "verified",
            "--max-messages",
            "3000",
        ],
        b"",
    );
    let summary = produced.lines().last().unwrap_or_default();
    assert!(
        summary.contains("\"sent\":3000") && summary.contains("\"acked\":3000"),
        "{produced}"
    );
    let consumed = kafka_tool_ok(
        "org.apache.kafka.tools.VerifiableConsumer",
        &[
            "--bootstrap-server",
            &brokers.ferrolog,
            "--topic",
            "verified",
            "--group-id",
            "verifier",
            "--max-messages",
            "3000",
            "--reset-policy",
            "earliest",
        ],
        b"",
    );
    let mut values = std::collections::BTreeSet::new();
    for line in consumed
        .lines()
        .filter(|line| line.contains("\"name\":\"records_consumed\""))
    {
        // Each event lists the partitions it read with their first and last offsets.
        for range in line.split("\"minOffset\":").skip(1) {
            let min: i64 = range.split(',').next().unwrap().parse().unwrap();
            let max: i64 = range
                .split("\"maxOffset\":")
                .nth(1)
                .unwrap()
                .split('}')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            values.extend(min..=max);
        }
    }
    assert_eq!(values.len(), 3000, "offsets read: {consumed}");
    assert!(
        consumed.contains("\"name\":\"offsets_committed\""),
        "{consumed}"
    );
    server.stop();
}

#[test]
fn clients_and_kafka_streams_work_against_ferrolog_as_against_kafka() {
    let Some(go_clients) = go_clients() else {
        return;
    };
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka = KafkaPeer::start(&temp.path().join("kafka").join("data"), &[]);
    let server = Server::start(&temp.path().join("ferrolog"));
    for broker in [kafka.bootstrap(), format!("127.0.0.1:{}", server.port)] {
        for client in ["franz", "sarama"] {
            let output = std::process::Command::new(&go_clients)
                .args([client, &broker, &format!("{client}-topic")])
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "{client} against {broker}: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            assert!(
                stdout.ends_with("produced 1000, consumed 1000, committed 1000\n"),
                "{client} against {broker}: {stdout}"
            );
        }
        // A Kafka Streams word count: the Java producer with its defaults, a repartition
        // topic, a state store with its changelog, the count read back.
        let state = tempfile::tempdir().unwrap();
        let counted = kafka_tool_ok(
            "WordCountCheck",
            &[&broker, "word-count", state.path().to_str().unwrap()],
            b"",
        );
        assert!(counted.contains("every final count right"), "{counted}");
    }
    drop(kafka);
    // The application's internal topics, made by Streams through CreateTopics, with the
    // settings it asked for.
    let ferrolog = format!("127.0.0.1:{}", server.port);
    let topics = kafka_tool_ok(TOPICS, &["--bootstrap-server", &ferrolog, "--list"], b"");
    for internal in [
        "word-count-word-counts-changelog",
        "word-count-word-counts-repartition",
    ] {
        assert!(
            topics.lines().any(|line| line == internal),
            "{internal}: {topics}"
        );
    }
    let changelog = kafka_tool_ok(
        CONFIGS,
        &[
            "--bootstrap-server",
            &ferrolog,
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            "word-count-word-counts-changelog",
        ],
        b"",
    );
    assert!(changelog.contains("cleanup.policy=compact"), "{changelog}");
    server.stop();
}
