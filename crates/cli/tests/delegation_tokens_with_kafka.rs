//! Delegation tokens through Kafka 4.4's `kafka-delegation-tokens`, against `ferrolog serve`
//! and Kafka 4.4 configured alike (a PLAINTEXT listener, a SASL_PLAINTEXT one with PLAIN and
//! SCRAM-SHA-256, `delegation.token.secret.key` set): alice creates a token with bob as its
//! renewer and describes it, bob renews it, carol may not; the Java producer authenticates with
//! the token over SCRAM and produces, and may not ask for a token through it; a PLAINTEXT
//! connection may not either; alice expires the token, after which it is gone and authenticates
//! no one. Every step prints the same on both brokers, token ids, HMACs and dates aside.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

use std::path::Path;

use common::kafka::{KafkaPeer, kafka_available, kafka_tool};
use common::security::{PLAIN_MODULE, SCRAM_MODULE, java_config};
use common::{Server, free_port};

const TOKENS: &str = "org.apache.kafka.tools.DelegationTokenCommand";
const PRODUCER: &str = "org.apache.kafka.tools.ConsoleProducer";

/// What both brokers are configured with, beside their listeners.
fn token_lines() -> Vec<String> {
    vec![
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256".into(),
        format!(
            r#"listener.name.sasl_plaintext.plain.sasl.jaas.config={PLAIN_MODULE} required user_alice="alice-secret" user_bob="bob-secret" user_carol="carol-secret";"#
        ),
        format!(
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_MODULE} required;"
        ),
        "delegation.token.secret.key=token-secret".into(),
    ]
}

/// `text` with each date the tool prints (`2026-12-06T15:04`) written `<date>`.
fn without_dates(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut at = 0;
    while at < text.len() {
        let date = bytes.get(at..at + 16).is_some_and(|window| {
            window.iter().enumerate().all(|(i, byte)| match i {
                4 | 7 => *byte == b'-',
                10 => *byte == b'T',
                13 => *byte == b':',
                _ => byte.is_ascii_digit(),
            })
        });
        if date {
            out.push_str("<date>");
            at += 16;
        } else {
            let c = text[at..].chars().next().unwrap();
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

/// `kafka-delegation-tokens` against `bootstrap` as configured in `config`: its exit status
/// and what it printed, the first line of an error only (its stack trace differs by broker).
fn tokens(bootstrap: &str, config: &str, args: &[&str]) -> String {
    let mut all = vec!["--bootstrap-server", bootstrap, "--command-config", config];
    all.extend_from_slice(args);
    let output = kafka_tool(TOKENS, &all, b"");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let error = stderr
        .lines()
        .find(|line| line.contains("Exception"))
        .unwrap_or("");
    format!(
        "exit {}\n{}\n{error}",
        output.status.code().unwrap_or(-1),
        stdout.trim_end()
    )
}

/// The producer's outcome sending three records as configured in `config`.
fn produce(bootstrap: &str, config: &str) -> String {
    let output = kafka_tool(
        PRODUCER,
        &[
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "t",
            "--producer.config",
            config,
        ],
        b"one\ntwo\nthree\n",
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if all.contains("Authentication failed") || all.contains("SaslAuthenticationException") {
        "producer: authentication failed".into()
    } else if output.status.success() {
        "producer: ok".into()
    } else {
        format!("producer: failed {all}")
    }
}

/// The scenario against one broker (`plain` its PLAINTEXT port, `sasl` its SASL one): each
/// step's output, with the token's id and HMAC written `<id>` and `<hmac>`.
fn transcript(plain: u16, sasl: u16, dir: &Path) -> Vec<String> {
    let on_sasl = format!("127.0.0.1:{sasl}");
    let as_user = |name: &str| {
        let password = format!("{name}-secret");
        java_config(dir, name, Some(("PLAIN", name, &password)), None)
    };
    let (alice, bob, carol) = (as_user("alice"), as_user("bob"), as_user("carol"));
    let mut steps = Vec::new();
    let created = tokens(
        &on_sasl,
        &alice,
        &[
            "--create",
            "--max-life-time-period",
            "-1",
            "--renewer-principal",
            "User:bob",
        ],
    );
    let id = created
        .lines()
        .find_map(|line| line.strip_prefix("Created delegation token with tokenId : "))
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let hmac = created
        .lines()
        .find_map(|line| line.strip_prefix(&format!("{id} ")))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let mut record = |text: String| {
        let text = without_dates(&text)
            .replace(&hmac, "<hmac>")
            .replace(&id, "<id>");
        steps.push(text);
    };
    record(created.clone());
    let described = tokens(
        &on_sasl,
        &alice,
        &["--describe", "--owner-principal", "User:alice"],
    );
    record(described);
    let renew = [
        "--renew",
        "--hmac",
        hmac.as_str(),
        "--renew-time-period",
        "3600000",
    ];
    record(tokens(&on_sasl, &bob, &renew));
    record(tokens(&on_sasl, &carol, &renew));
    // The token's own connection: SCRAM with the token's id and HMAC.
    let token_config = dir.join("token.properties");
    std::fs::write(
        &token_config,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nrequest.timeout.ms=4000\nmax.block.ms=8000\nsasl.jaas.config={SCRAM_MODULE} required username=\"{id}\" password=\"{hmac}\" tokenauth=\"true\";\n"
        ),
    )
    .unwrap();
    let token_config = token_config.display().to_string();
    record(produce(&on_sasl, &token_config));
    record(tokens(
        &on_sasl,
        &token_config,
        &["--create", "--max-life-time-period", "-1"],
    ));
    let plaintext = dir.join("plaintext.properties");
    std::fs::write(&plaintext, "security.protocol=PLAINTEXT\n").unwrap();
    record(tokens(
        &format!("127.0.0.1:{plain}"),
        &plaintext.display().to_string(),
        &["--create", "--max-life-time-period", "-1"],
    ));
    let expire = [
        "--expire",
        "--hmac",
        hmac.as_str(),
        "--expiry-time-period",
        "-1",
    ];
    record(tokens(&on_sasl, &alice, &expire));
    record(tokens(
        &on_sasl,
        &alice,
        &["--describe", "--owner-principal", "User:alice"],
    ));
    record(produce(&on_sasl, &token_config));
    steps
}

#[test]
fn delegation_tokens_are_created_used_and_expired_as_on_kafka() {
    if !kafka_available() {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let kafka_sasl = free_port();
    let kafka = KafkaPeer::start_with_ports(&temp.path().join("kafka"), |port, controller| {
        let mut lines = vec![
            format!("listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller},SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}"),
            format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}"),
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT".into(),
        ];
        lines.extend(token_lines());
        lines
    });
    let kafka_dir = temp.path().join("kafka-clients");
    std::fs::create_dir_all(&kafka_dir).unwrap();
    let theirs = transcript(kafka.port, kafka_sasl, &kafka_dir);
    drop(kafka);

    let (port, sasl) = (free_port(), free_port());
    let mut overrides = vec![format!(
        "listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}"
    )];
    overrides.extend(token_lines());
    let overrides: Vec<&str> = overrides.iter().map(String::as_str).collect();
    let server = Server::start_on(port, &[], &temp.path().join("ferrolog"), &overrides, "warn");
    let ferrolog_dir = temp.path().join("ferrolog-clients");
    std::fs::create_dir_all(&ferrolog_dir).unwrap();
    let ours = transcript(port, sasl, &ferrolog_dir);
    for (theirs, ours) in theirs.iter().zip(&ours) {
        println!("kafka:\n{theirs}\nferrolog:\n{ours}\n");
    }
    assert_eq!(ours, theirs);
    // What the scenario is about, as Kafka printed it.
    assert!(
        theirs[1].contains("Total number of tokens : 1"),
        "{}",
        theirs[1]
    );
    assert!(
        theirs[2].contains("Completed renew operation"),
        "{}",
        theirs[2]
    );
    assert!(
        theirs[3].contains("DelegationTokenOwnerMismatchException"),
        "{}",
        theirs[3]
    );
    assert_eq!(theirs[4], "producer: ok");
    assert!(theirs[5].contains("not allowed"), "{}", theirs[5]);
    assert!(
        theirs[8].contains("Total number of tokens : 0"),
        "{}",
        theirs[8]
    );
    assert_eq!(theirs[9], "producer: authentication failed");
    server.stop();
}
