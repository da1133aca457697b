//! Real clients over SASL_PLAINTEXT, against `ferrolog serve` and a Kafka 4.4 broker configured
//! alike (a PLAINTEXT listener and a SASL_PLAINTEXT one with PLAIN, SCRAM-SHA-256 and
//! SCRAM-SHA-512; Kafka's StandardAuthorizer with `User:admin` a super user):
//!
//! - Kafka's `kafka-configs` creates SCRAM users and lists them, and refuses what Kafka refuses;
//! - `kafka-topics` and `kafka-acls` as the PLAIN administrator;
//! - Kafka's Java console producer and consumer over SCRAM-SHA-512, confluent-kafka
//!   (librdkafka), kafka-python and kafkajs over SCRAM-SHA-512 and over PLAIN, kcat over PLAIN,
//!   as a user with ACLs; franz-go as the administrator over SCRAM-SHA-512;
//! - each client refused with a wrong password, as an unknown user, and without credentials.
//!
//! Both brokers must give the same transcript of outcomes.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;
use std::process::Command;

use common::kafka::{KafkaPeer, go_clients, kafka_available};
use common::security::{
    self, PLAIN_MODULE, SCRAM_MODULE, ScriptedClient, java_config, refusal, tool,
};
use common::{Server, free_port, kcat};

const CONFIGS: &str = "org.apache.kafka.tools.ConfigCommand";
const TOPICS: &str = "org.apache.kafka.tools.TopicCommand";
const ACLS: &str = "org.apache.kafka.tools.AclCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";
const CONSUMER: &str = "org.apache.kafka.tools.consumer.ConsoleConsumer";

/// The configuration both brokers share, beside their listeners.
fn security_lines() -> Vec<String> {
    vec![
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        // ANONYMOUS is the PLAINTEXT listener's principal, which Kafka's own controller and
        // the test harness use.
        "super.users=User:admin;User:ANONYMOUS".into(),
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512".into(),
        format!(
            r#"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required user_admin="admin-secret" user_alice="alice-plain";"#
        ),
        format!(
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_MODULE} required;"
        ),
        format!(
            "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} required;"
        ),
    ]
}

/// A Java client configuration for `mechanism` (`none`: PLAINTEXT) as `user`.
fn client_config(dir: &Path, name: &str, mechanism: &str, user: &str, password: &str) -> String {
    let sasl = (mechanism != "none").then_some((mechanism, user, password));
    java_config(dir, name, sasl, None)
}

/// kcat on the SASL listener with `mechanism` (`none`: PLAINTEXT) as `user`.
fn kcat_run(
    kcat: &Path,
    port: u16,
    mechanism: &str,
    user: &str,
    password: &str,
    args: &[&str],
    stdin: &[u8],
) -> String {
    let sasl = (mechanism != "none").then_some((mechanism, user, password));
    security::kcat_run(kcat, port, sasl, None, args, stdin)
}

/// Everything the clients meet on one broker, one line per step.
fn transcript(sasl: u16, dir: &Path) -> Vec<String> {
    let sasl_bootstrap = format!("127.0.0.1:{sasl}");
    let admin = client_config(dir, "admin.properties", "PLAIN", "admin", "admin-secret");
    let admin_args = |args: &[&str]| -> Vec<String> {
        let mut all = vec![
            "--bootstrap-server".to_owned(),
            sasl_bootstrap.clone(),
            "--command-config".to_owned(),
            admin.clone(),
        ];
        all.extend(args.iter().map(|arg| (*arg).to_owned()));
        all
    };
    let run_admin = |class: &str, args: &[&str]| {
        let args = admin_args(args);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tool(class, &args, b"")
    };
    let mut lines = Vec::new();

    // SCRAM users, created and listed with kafka-configs as the PLAIN administrator.
    for (user, config) in [
        (
            "alice",
            "SCRAM-SHA-512=[iterations=8192,password=alice-secret]",
        ),
        ("bob", "SCRAM-SHA-256=[password=bob-secret]"),
        ("admin", "SCRAM-SHA-512=[password=admin-secret]"),
    ] {
        let (outcome, output) = run_admin(
            CONFIGS,
            &[
                "--alter",
                "--entity-type",
                "users",
                "--entity-name",
                user,
                "--add-config",
                config,
            ],
        );
        assert!(outcome.starts_with("ok"), "{output}");
        lines.push(format!("kafka-configs --alter {user}: {outcome}"));
    }
    let (outcome, output) = run_admin(
        CONFIGS,
        &[
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "carol",
            "--add-config",
            "SCRAM-SHA-256=[iterations=20000,password=x]",
        ],
    );
    lines.push(format!(
        "kafka-configs 20000 iterations: {outcome} {}",
        if output.contains("Too many iterations") {
            "(too many iterations)"
        } else {
            output.as_str()
        }
    ));
    let (outcome, output) = run_admin(CONFIGS, &["--describe", "--entity-type", "users"]);
    assert!(outcome.starts_with("ok"), "{output}");
    let mut described: Vec<&str> = output
        .lines()
        .filter(|line| line.starts_with("SCRAM credential"))
        .collect();
    described.sort_unstable();
    lines.push(format!(
        "kafka-configs --describe: {}",
        described.join(" | ")
    ));
    // Kafka's brokers learn the credentials from their controller a moment after it answers.
    std::thread::sleep(std::time::Duration::from_secs(1));

    // Topics and ACLs for alice, as the administrator.
    for client in ["java", "kcat", "kafka-python", "confluent", "kafkajs"] {
        let topic = format!("orders-{client}");
        let (outcome, output) = run_admin(
            TOPICS,
            &[
                "--create",
                "--topic",
                &topic,
                "--partitions",
                "1",
                "--replication-factor",
                "1",
            ],
        );
        assert!(outcome.starts_with("ok"), "{output}");
    }
    for shape in [&["--producer"][..], &["--consumer", "--group", "billing"]] {
        let mut args = vec![
            "--add",
            "--allow-principal",
            "User:alice",
            "--topic",
            "orders-",
            "--resource-pattern-type",
            "prefixed",
        ];
        args.extend_from_slice(shape);
        let (outcome, output) = run_admin(ACLS, &args);
        assert!(outcome.starts_with("ok"), "{output}");
    }
    // The group ACL above is literal; the clients' groups start with `billing`.
    let (outcome, output) = run_admin(
        ACLS,
        &[
            "--add",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--group",
            "billing",
            "--resource-pattern-type",
            "prefixed",
        ],
    );
    assert!(outcome.starts_with("ok"), "{output}");
    std::thread::sleep(std::time::Duration::from_secs(1));

    // Kafka's Java client, as alice over SCRAM-SHA-512.
    let alice = client_config(
        dir,
        "alice.properties",
        "SCRAM-SHA-512",
        "alice",
        "alice-secret",
    );
    let (outcome, output) = tool(
        PRODUCER,
        &[
            "--bootstrap-server",
            &sasl_bootstrap,
            "--topic",
            "orders-java",
            "--command-config",
            &alice,
        ],
        b"one\ntwo\nthree\n",
    );
    lines.push(format!("java producer: {outcome}"));
    assert!(outcome.starts_with("ok"), "{output}");
    let (outcome, output) = tool(
        CONSUMER,
        &[
            "--bootstrap-server",
            &sasl_bootstrap,
            "--topic",
            "orders-java",
            "--group",
            "billing-java",
            "--from-beginning",
            "--max-messages",
            "3",
            "--timeout-ms",
            "30000",
            "--command-config",
            &alice,
        ],
        b"",
    );
    lines.push(format!("java consumer: {}", outcome.replace('\n', ",")));
    assert!(outcome.starts_with("ok"), "{output}");
    for (name, mechanism, user, password) in [
        ("wrong password", "SCRAM-SHA-512", "alice", "alice-secreT"),
        ("unknown user", "SCRAM-SHA-512", "mallory", "alice-secret"),
        ("wrong PLAIN password", "PLAIN", "alice", "alice-secret"),
        ("no credentials", "none", "", ""),
    ] {
        let config = client_config(dir, "refused.properties", mechanism, user, password);
        let (outcome, output) = tool(
            TOPICS,
            &[
                "--bootstrap-server",
                &sasl_bootstrap,
                "--command-config",
                &config,
                "--list",
            ],
            b"",
        );
        lines.push(format!("java {name}: {outcome} {}", refusal(&output)));
    }

    // kcat (librdkafka). Debian's kcat 1.7.1, on librdkafka 2.0.2, fails every SCRAM exchange
    // against Kafka 4.4 as against ferrolog (confluent-kafka's librdkafka below succeeds), so it
    // authenticates with PLAIN, and meets SCRAM only in the refusals.
    if let Some(kcat) = kcat() {
        let produced = kcat_run(
            &kcat,
            sasl,
            "PLAIN",
            "alice",
            "alice-plain",
            &["-P", "-t", "orders-kcat"],
            b"PLAIN-a\nPLAIN-b\n",
        );
        let consumed = kcat_run(
            &kcat,
            sasl,
            "PLAIN",
            "alice",
            "alice-plain",
            &["-C", "-t", "orders-kcat", "-e", "-q"],
            b"",
        );
        lines.push(format!(
            "kcat PLAIN: produce {produced}; consume {consumed}"
        ));
        for (name, mechanism, user, password) in [
            ("wrong password", "SCRAM-SHA-512", "alice", "nope"),
            ("unknown user", "SCRAM-SHA-256", "mallory", "nope"),
            ("no credentials", "none", "", ""),
        ] {
            lines.push(format!(
                "kcat {name}: {}",
                kcat_run(&kcat, sasl, mechanism, user, password, &["-L"], b"")
            ));
        }
    }

    // kafka-python, confluent-kafka and kafkajs.
    for client in ScriptedClient::installed() {
        let client_name = client.name();
        let topic = format!("orders-{client_name}");
        for (name, sasl_credentials) in [
            (
                "SCRAM-SHA-512",
                Some(("SCRAM-SHA-512", "alice", "alice-secret")),
            ),
            ("PLAIN", Some(("PLAIN", "alice", "alice-plain"))),
            ("wrong password", Some(("SCRAM-SHA-512", "alice", "nope"))),
            ("unknown user", Some(("SCRAM-SHA-256", "mallory", "nope"))),
            ("wrong PLAIN password", Some(("PLAIN", "alice", "nope"))),
            ("no credentials", None),
        ] {
            let group = format!("billing-{client_name}-{}", name.replace(' ', "-"));
            let outcome = client.run(sasl, sasl_credentials, None, &topic, &group);
            lines.push(format!("{client_name} {name}: {outcome}"));
        }
    }

    // franz-go as the administrator over SCRAM-SHA-512 (its scenario creates a topic).
    if let Some(go_clients) = go_clients() {
        for (name, password) in [
            ("right password", "admin-secret"),
            ("wrong password", "nope"),
        ] {
            let output = Command::new(&go_clients)
                .args([
                    "franz",
                    &sasl_bootstrap,
                    &format!("franz-{}", password.len()),
                ])
                .env("FERROLOG_SASL", format!("SCRAM-SHA-512:admin:{password}"))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            lines.push(format!(
                "franz-go {name}: {}",
                match (
                    output.status.success(),
                    stderr.contains("SASL_AUTHENTICATION_FAILED")
                        || stderr.contains("Authentication failed")
                ) {
                    (true, _) => "ok".to_owned(),
                    (false, true) => "refused: authentication failed".to_owned(),
                    (false, false) => format!("failed: {stderr}"),
                }
            ));
        }
    }
    lines
}

#[test]
fn real_clients_authenticate_and_are_refused_as_with_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    // The same clients against Kafka and against ferrolog, side by side: each mostly waits for
    // its clients' JVMs and timeouts.
    let (from_kafka, (from_ferrolog, server)) = std::thread::scope(|scope| {
        let kafka_side = scope.spawn(|| {
            let kafka_sasl = free_port();
            let kafka = KafkaPeer::start_with_ports(&temp.path().join("kafka"), |port, controller| {
                let mut lines = vec![
                    format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}"),
                    format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}"),
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT".into(),
                ];
                lines.extend(security_lines());
                lines
            });
            let kafka_dir = temp.path().join("kafka-clients");
            std::fs::create_dir_all(&kafka_dir).unwrap();
            let from_kafka = transcript(kafka_sasl, &kafka_dir);
            drop(kafka);
            from_kafka
        });
        let (port, sasl) = (free_port(), free_port());
        let mut overrides = vec![
            format!("listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}"),
            // The failure delay as Kafka's, for the clients' timings.
            "connection.failed.authentication.delay.ms=100".to_owned(),
        ];
        overrides.extend(security_lines());
        let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
        let server = Server::start_on(port, &[], &temp.path().join("ferrolog"), &overrides, "warn");
        let ferrolog_dir = temp.path().join("ferrolog-clients");
        std::fs::create_dir_all(&ferrolog_dir).unwrap();
        let from_ferrolog = transcript(sasl, &ferrolog_dir);
        assert_eq!(server.port, port);
        (kafka_side.join().unwrap(), (from_ferrolog, server))
    });

    for line in &from_kafka {
        eprintln!("{line}");
    }
    // The transcript is what it must be, not only the same on both.
    let expected_outcomes = [
        (
            "kafka-configs --alter alice: ok Completed updating config for user alice.",
            true,
        ),
        (
            "kafka-configs 20000 iterations: failed (too many iterations)",
            true,
        ),
        ("java consumer: ok one,two,three", true),
        (
            "java wrong password: failed refused: authentication failed",
            true,
        ),
        (
            "java unknown user: failed refused: authentication failed",
            true,
        ),
        ("java no credentials: failed refused: timed out", true),
        ("kafkajs SCRAM-SHA-512: exit Some(0), ok 5", true),
        ("kafkajs PLAIN: exit Some(0), ok 5", true),
        ("kafkajs wrong password: exit Some(2), refused", true),
        ("kafkajs unknown user: exit Some(2), refused", true),
        ("kafkajs wrong PLAIN password: exit Some(2), refused", true),
        ("kafkajs no credentials: exit Some(2), refused", true),
    ];
    for (line, _) in expected_outcomes {
        assert!(
            from_kafka.iter().any(|l| l == line),
            "Kafka's transcript lacks {line:?}: {from_kafka:#?}"
        );
    }
    assert_eq!(
        from_ferrolog, from_kafka,
        "ferrolog (left) and Kafka (right)"
    );
    server.stop();
}
