//! Moving partitions between data directories with Kafka 4.4's own tools, against `ferrolog
//! serve` and against a Kafka 4.4 broker beside it, both with two data directories:
//! `kafka-log-dirs --describe` before and after, `kafka-reassign-partitions` with `log_dirs` in
//! its plan (`--execute`, then `--verify` until the move is done), a move throttled with
//! `--replica-alter-log-dirs-throttle` (whose `--verify` clears the throttle), a move a
//! throttle of 1 B/s holds part-way (the copy a future log behind its partition, `--verify`
//! still in progress, until the throttle is deleted), and a plan naming
//! a directory the broker does not have. Outputs are compared once the directories' paths are
//! masked; the records read back are the same.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use common::Server;
use common::kafka::{
    CONFIG_COMMAND, DELETE_MOVE_THROTTLE, KafkaPeer, kafka_available, kafka_tool, kafka_tool_ok,
};

const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const LOG_DIRS: &str = "org.apache.kafka.tools.LogDirsCommand";
const REASSIGN: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
const TOPIC: &str = "moving";
/// A topic whose move a throttle holds part-way.
const HELD: &str = "held";
const RECORDS: usize = 3000;

/// One broker and its two data directories.
struct Broker {
    name: &'static str,
    bootstrap: String,
    dirs: [PathBuf; 2],
}

impl Broker {
    fn path(&self, index: usize) -> String {
        self.dirs[index].display().to_string()
    }

    /// Runs a tool with `--bootstrap-server` this broker.
    fn run(&self, class: &str, args: &[&str], stdin: &[u8]) -> Output {
        let mut all = vec!["--bootstrap-server", self.bootstrap.as_str()];
        all.extend_from_slice(args);
        kafka_tool(class, &all, stdin)
    }

    /// What a tool printed (stdout, then stderr), the data directories' paths masked.
    fn masked(&self, output: &Output) -> String {
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        for index in [0, 1] {
            text = text.replace(&self.path(index), &format!("<dir {index}>"));
        }
        text
    }

    /// A reassignment plan moving `partitions` (partition, directory index or `None` for
    /// "any") on broker 0.
    fn plan(&self, partitions: &[(i32, Option<usize>)], file: &Path) -> String {
        let entries: Vec<String> = partitions
            .iter()
            .map(|(partition, dir)| {
                let dir = dir.map_or_else(|| "any".to_owned(), |index| self.path(index));
                format!(
                    r#"{{"topic":"{TOPIC}","partition":{partition},"replicas":[0],"log_dirs":["{dir}"]}}"#
                )
            })
            .collect();
        let plan = format!(r#"{{"version":1,"partitions":[{}]}}"#, entries.join(","));
        std::fs::write(file, &plan).unwrap();
        file.display().to_string()
    }

    /// `kafka-log-dirs --describe` of the test's topic.
    fn log_dirs(&self) -> Vec<(String, usize, bool, i64)> {
        self.log_dirs_of(TOPIC)
    }

    /// `kafka-log-dirs --describe` of `topic`: per partition, its directory index and whether
    /// it is a future log, with its offset lag; sorted.
    fn log_dirs_of(&self, topic: &str) -> Vec<(String, usize, bool, i64)> {
        let output = self.run(LOG_DIRS, &["--describe", "--topic-list", topic], b"");
        assert!(output.status.success(), "{}", self.masked(&output));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines[0], "Querying brokers for log directories information");
        assert_eq!(
            lines[1],
            "Received log directory information from brokers 0"
        );
        let json: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        let mut partitions = Vec::new();
        for broker in json["brokers"].as_array().unwrap() {
            for dir in broker["logDirs"].as_array().unwrap() {
                assert!(dir["error"].is_null(), "{dir}");
                let path = dir["logDir"].as_str().unwrap();
                let index = (0..2).find(|index| self.path(*index) == path).unwrap();
                for partition in dir["partitions"].as_array().unwrap() {
                    partitions.push((
                        partition["partition"].as_str().unwrap().to_owned(),
                        index,
                        partition["isFuture"].as_bool().unwrap(),
                        partition["offsetLag"].as_i64().unwrap(),
                    ));
                }
            }
        }
        partitions.sort();
        partitions
    }

    /// Runs `--verify` on `plan` until every move it names is done; returns that last output.
    fn verify_until_done(&self, plan: &str, moves: usize) -> String {
        let started = Instant::now();
        loop {
            let output = self.run(
                REASSIGN,
                &["--verify", "--reassignment-json-file", plan],
                b"",
            );
            let text = self.masked(&output);
            if output.status.success() && text.matches("completed successfully").count() == moves {
                return text;
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "{}: the move did not finish:\n{text}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

#[test]
fn kafkas_tools_move_partitions_between_log_dirs_of_ferrolog_as_of_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_dirs = [temp.path().join("kafka/a"), temp.path().join("kafka/b")];
    let ferrolog_dirs = [
        temp.path().join("ferrolog/a"),
        temp.path().join("ferrolog/b"),
    ];
    let log_dirs = |dirs: &[PathBuf; 2]| format!("{},{}", dirs[0].display(), dirs[1].display());
    std::fs::create_dir_all(&kafka_dirs[1]).unwrap();
    let kafka = KafkaPeer::start(
        &kafka_dirs[0],
        &[&format!("log.dirs={}", log_dirs(&kafka_dirs))],
    );
    let server = Server::start(Path::new(&log_dirs(&ferrolog_dirs)));
    let brokers = [
        Broker {
            name: "Kafka",
            bootstrap: kafka.bootstrap(),
            dirs: kafka_dirs.clone(),
        },
        Broker {
            name: "ferrolog",
            bootstrap: format!("127.0.0.1:{}", server.port),
            dirs: ferrolog_dirs.clone(),
        },
    ];
    // The same steps on both brokers; each step's outputs compared.
    let each = |step: &dyn Fn(&Broker) -> String| {
        let outputs: Vec<String> = brokers.iter().map(step).collect();
        assert_eq!(outputs[1], outputs[0], "ferrolog (left) and Kafka (right)");
        outputs.into_iter().next().unwrap()
    };
    let ok = |broker: &Broker, class: &str, args: &[&str], stdin: &[u8]| {
        let output = broker.run(class, args, stdin);
        let text = broker.masked(&output);
        assert!(
            output.status.success(),
            "{}: {class} {args:?}:\n{text}",
            broker.name
        );
        text
    };

    let input: String = (0..RECORDS).map(|i| format!("k{i}:value-{i}\n")).collect();
    each(&|broker| {
        ok(
            broker,
            TOPICS,
            &["--create", "--topic", TOPIC, "--partitions", "2"],
            b"",
        );
        ok(
            broker,
            "org.apache.kafka.tools.ConsoleProducer",
            &[
                "--topic",
                TOPIC,
                "--reader-property",
                "parse.key=true",
                "--reader-property",
                "key.separator=:",
            ],
            input.as_bytes(),
        )
    });
    // One partition in each directory: both brokers place a new partition in the directory
    // holding the fewest.
    let before = each(&|broker| format!("{:?}", broker.log_dirs()));
    assert_eq!(
        before,
        r#"[("moving-0", 0, false, 0), ("moving-1", 1, false, 0)]"#
    );

    // kafka-reassign-partitions with log_dirs: partition 0 to the second directory.
    let plan_file = temp.path().join("move-0.json");
    let executed = each(&|broker| {
        let plan = broker.plan(&[(0, Some(1)), (1, None)], &plan_file);
        ok(
            broker,
            REASSIGN,
            &["--execute", "--reassignment-json-file", &plan],
            b"",
        )
    });
    assert!(
        executed.contains("Successfully started moving log directory to <dir 1> for replica moving-0 with broker 0"),
        "{executed}"
    );
    each(&|broker| {
        let plan = broker.plan(&[(0, Some(1)), (1, None)], &plan_file);
        broker.verify_until_done(&plan, 1)
    });
    let after = each(&|broker| format!("{:?}", broker.log_dirs()));
    assert_eq!(
        after,
        r#"[("moving-0", 1, false, 0), ("moving-1", 1, false, 0)]"#
    );

    // A throttled move of partition 1 back; the verify that finds it done clears the throttle.
    let throttled_file = temp.path().join("move-1.json");
    let throttled = each(&|broker| {
        let plan = broker.plan(&[(1, Some(0))], &throttled_file);
        ok(
            broker,
            REASSIGN,
            &[
                "--execute",
                "--reassignment-json-file",
                &plan,
                "--replica-alter-log-dirs-throttle",
                "50000000",
            ],
            b"",
        )
    });
    assert!(
        throttled.contains("The replica-alter-dir throttle limit was set to 50000000 B/s"),
        "{throttled}"
    );
    let verified = each(&|broker| {
        let plan = broker.plan(&[(1, Some(0))], &throttled_file);
        broker.verify_until_done(&plan, 1)
    });
    assert!(
        verified.contains("Clearing broker-level throttles on broker 0"),
        "{verified}"
    );
    let moved = each(&|broker| format!("{:?}", broker.log_dirs()));
    assert_eq!(
        moved,
        r#"[("moving-0", 1, false, 0), ("moving-1", 0, false, 0)]"#
    );

    // A move held part-way by a throttle of 1 B/s: both brokers show the copy as a future log
    // behind its partition, and `--verify` says it is still in progress; once the throttle is
    // deleted the move ends.
    let held_file = |broker: &Broker| temp.path().join(format!("held-{}.json", broker.name));
    let held = each(&|broker| {
        ok(
            broker,
            TOPICS,
            &["--create", "--topic", HELD, "--partitions", "1"],
            b"",
        );
        kafka_tool_ok(
            "org.apache.kafka.tools.ProducerPerformance",
            &[
                "--topic",
                HELD,
                "--num-records",
                "3000",
                "--record-size",
                "1000",
                "--throughput",
                "-1",
                "--producer-props",
                &format!("bootstrap.servers={}", broker.bootstrap),
                "acks=all",
            ],
            b"",
        );
        let from = broker.log_dirs_of(HELD)[0].1;
        let plan = format!(
            r#"{{"version":1,"partitions":[{{"topic":"{HELD}","partition":0,"replicas":[0],"log_dirs":["{}"]}}]}}"#,
            broker.path(1 - from)
        );
        std::fs::write(held_file(broker), plan).unwrap();
        let held_plan = held_file(broker).display().to_string();
        let executed = ok(
            broker,
            REASSIGN,
            &[
                "--execute",
                "--reassignment-json-file",
                &held_plan,
                "--replica-alter-log-dirs-throttle",
                "1",
            ],
            b"",
        );
        // Where each row is, relative to where the partition was: (partition, "from"/"to",
        // future, behind).
        let rows: Vec<String> = broker
            .log_dirs_of(HELD)
            .into_iter()
            .map(|(partition, dir, future, lag)| {
                let place = if dir == from { "from" } else { "to" };
                format!("{partition} {place} future={future} behind={}", lag > 0)
            })
            .collect();
        let verified = broker.run(
            REASSIGN,
            &["--verify", "--reassignment-json-file", &held_plan],
            b"",
        );
        let verified = broker
            .masked(&verified)
            .replace(&format!("<dir {}>", 1 - from), "<target>");
        format!(
            "{}\n{}\n{verified}",
            executed.replace(&format!("<dir {}>", 1 - from), "<target>"),
            rows.join("\n")
        )
    });
    assert!(
        held.contains(&format!(
            "{HELD}-0 from future=false behind=false\n{HELD}-0 to future=true behind=true"
        )),
        "{held}"
    );
    assert!(held.contains("is still in progress."), "{held}");
    each(&|broker| {
        ok(broker, CONFIG_COMMAND, DELETE_MOVE_THROTTLE, b"");
        broker.verify_until_done(&held_file(broker).display().to_string(), 1);
        let rows = broker.log_dirs_of(HELD);
        assert_eq!(rows.len(), 1, "{rows:?}");
        format!("{:?}", (&rows[0].0, rows[0].2, rows[0].3))
    });

    // A directory the broker does not have.
    let refused = each(&|broker| {
        let file = temp.path().join("nowhere.json");
        std::fs::write(
            &file,
            format!(
                r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[0],"log_dirs":["{}/elsewhere"]}}]}}"#,
                broker.path(0)
            ),
        )
        .unwrap();
        let output = broker.run(
            REASSIGN,
            &[
                "--execute",
                "--reassignment-json-file",
                &file.display().to_string(),
            ],
            b"",
        );
        assert!(!output.status.success());
        let text = broker.masked(&output);
        // Only the tool's verdict: a Java stack trace follows it.
        text.lines()
            .filter(|line| line.contains("Error") || line.contains("Failed"))
            .map(|line| format!("{line}\n"))
            .collect()
    });
    assert!(
        refused.contains("Failed to alter dir for moving-0-0"),
        "{refused}"
    );

    // The records, wherever they moved.
    let consumed = each(&|broker| {
        let text = kafka_tool_ok(
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            &[
                "--bootstrap-server",
                &broker.bootstrap,
                "--topic",
                TOPIC,
                "--from-beginning",
                "--max-messages",
                &RECORDS.to_string(),
                "--property",
                "print.key=true",
                "--property",
                "key.separator=:",
            ],
            b"",
        );
        // The records, without the tool's closing count.
        let mut lines: Vec<&str> = text.lines().filter(|line| line.starts_with('k')).collect();
        lines.sort_unstable();
        lines.join("\n")
    });
    assert_eq!(consumed.lines().count(), RECORDS);
    drop(kafka);
    server.stop();
}
