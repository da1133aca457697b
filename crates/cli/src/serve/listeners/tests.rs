//! Listener plans from Kafka's keys, and the mistakes each refused with its key.

#![allow(clippy::unwrap_used, reason = "tests")]

use super::*;

fn properties(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

const PLAIN_JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#;

#[test]
fn a_listener_takes_its_own_connection_limit() {
    let two = "PLAINTEXT://127.0.0.1:0,ADMIN://127.0.0.1:0";
    let map = "PLAINTEXT:PLAINTEXT,ADMIN:PLAINTEXT";
    let (planned, _) = plan(&properties(&[
        ("listeners", two),
        ("listener.security.protocol.map", map),
        ("listener.name.plaintext.max.connections", "300"),
        ("listener.name.admin.max.connection.creation.rate", "20"),
    ]))
    .unwrap();
    let limits: Vec<Option<usize>> = planned.iter().map(|p| p.listener.max_connections).collect();
    assert_eq!(limits, [Some(300), None]);
    for (key, value, named) in [
        (
            "listener.name.plaintext.max.connections",
            "0",
            "listener.name.plaintext.max.connections",
        ),
        (
            "listener.name.plaintext.max.connections",
            "many",
            "\"many\"",
        ),
        ("listener.name.other.max.connections", "5", "listener other"),
        (
            "listener.name.other.max.connection.creation.rate",
            "5",
            "listener other",
        ),
    ] {
        let error = plan(&properties(&[
            ("listeners", two),
            ("listener.security.protocol.map", map),
            (key, value),
        ]))
        .unwrap_err()
        .to_string();
        assert!(error.contains(named), "{key}={value}: {error}");
    }
}

#[test]
fn the_default_is_one_plaintext_listener_on_loopback() {
    let (planned, skipped) = plan(&properties(&[])).unwrap();
    assert!(skipped.is_empty());
    let [only] = &planned[..] else {
        panic!("{planned:?}")
    };
    assert_eq!(only.bind, "127.0.0.1:9092".parse().unwrap());
    assert_eq!(only.listener.name, "PLAINTEXT");
    assert_eq!(only.listener.protocol, SecurityProtocol::Plaintext);
    assert_eq!(only.listener.advertised.host, "127.0.0.1");
    assert!(only.listener.sasl.is_none());
}

#[test]
fn named_listeners_take_their_protocols_and_advertised_addresses() {
    let (planned, notes) = plan(&properties(&[
        (
            "listeners",
            "CLIENTS://:9092, internal://127.0.0.1:9094,CONTROLLER://:9093",
        ),
        (
            "listener.security.protocol.map",
            "CLIENTS:SASL_PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        ),
        ("controller.listener.names", "CONTROLLER"),
        // Kafka's own combined-node file advertises the controller listener too.
        (
            "advertised.listeners",
            "CLIENTS://broker1.example.com:19092,CONTROLLER://localhost:9093",
        ),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"),
        ("listener.name.clients.plain.sasl.jaas.config", PLAIN_JAAS),
        (
            "listener.name.clients.scram-sha-256.sasl.jaas.config",
            "org.apache.kafka.common.security.scram.ScramLoginModule required;",
        ),
    ]))
    .unwrap();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(
        notes[0].contains("listener CONTROLLER is a controller listener"),
        "{notes:?}"
    );
    assert!(
        notes[1].contains("SCRAM-SHA-256 is not enabled on listener clients"),
        "{notes:?}"
    );
    let names: Vec<_> = planned.iter().map(|p| p.listener.name.as_str()).collect();
    assert_eq!(names, ["CLIENTS", "INTERNAL"]);
    let clients = &planned[0];
    assert_eq!(clients.bind, "0.0.0.0:9092".parse().unwrap());
    assert_eq!(clients.listener.protocol, SecurityProtocol::SaslPlaintext);
    assert_eq!(
        clients.listener.advertised,
        Endpoint {
            host: "broker1.example.com".into(),
            port: 19092
        }
    );
    assert!(clients.advertised_given);
    let sasl = clients.listener.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanisms, [Mechanism::ScramSha512, Mechanism::Plain]);
    assert_eq!(
        sasl.plain_users.authenticate(b"\0alice\0alice-secret"),
        Ok("alice".into())
    );
    let internal = &planned[1];
    assert_eq!(
        internal.listener.advertised,
        Endpoint {
            host: "127.0.0.1".into(),
            port: 9094
        }
    );
    assert!(!internal.advertised_given);
}

#[test]
fn a_listeners_own_mechanisms_win() {
    let (planned, _) = plan(&properties(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        (
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
            "SCRAM-SHA-256",
        ),
    ]))
    .unwrap();
    let sasl = planned[0].listener.sasl.as_ref().unwrap();
    assert_eq!(sasl.mechanisms, [Mechanism::ScramSha256]);
    assert!(sasl.plain_users.is_empty());
}

#[test]
fn each_mistake_names_its_key() {
    let sasl = ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092");
    for (pairs, expected) in [
        (
            vec![("listeners", "CLIENTS://:9092")],
            "listener.security.protocol.map",
        ),
        (
            vec![("listeners", "SSL://:9093")],
            "ssl.keystore.type is JKS",
        ),
        (
            vec![("listeners", "PLAINTEXT://:9092,plaintext://:9093")],
            "twice",
        ),
        (
            vec![
                ("listeners", "A://:9092,B://:9092"),
                ("listener.security.protocol.map", "A:PLAINTEXT,B:PLAINTEXT"),
            ],
            "port 9092",
        ),
        (vec![("listeners", "PLAINTEXT://:x")], "in listeners"),
        (
            vec![("listener.security.protocol.map", "PLAINTEXT:TLS")],
            "listener.security.protocol.map",
        ),
        (
            vec![("advertised.listeners", "OTHER://h:1")],
            "advertised.listeners names OTHER",
        ),
        (vec![sasl], "GSSAPI"),
        (
            vec![sasl, ("sasl.enabled.mechanisms", "GSSAPI")],
            "not GSSAPI",
        ),
        (
            vec![sasl, ("sasl.enabled.mechanisms", "PLAIN,PLAIN")],
            "twice",
        ),
        (
            vec![sasl, ("sasl.enabled.mechanisms", "")],
            "no SASL mechanisms",
        ),
        (
            vec![sasl, ("sasl.enabled.mechanisms", "PLAIN")],
            "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set",
        ),
        (
            vec![
                sasl,
                ("sasl.enabled.mechanisms", "PLAIN"),
                (
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    "x.Y required;",
                ),
            ],
            "takes org.apache.kafka.common.security.plain.PlainLoginModule",
        ),
        (
            vec![
                sasl,
                ("sasl.enabled.mechanisms", "PLAIN"),
                (
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config",
                    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"a\";",
                ),
            ],
            "defines no users",
        ),
        (
            vec![
                sasl,
                ("sasl.enabled.mechanisms", "SCRAM-SHA-256"),
                (
                    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
                    PLAIN_JAAS,
                ),
            ],
            "takes org.apache.kafka.common.security.scram.ScramLoginModule",
        ),
        (
            vec![("listener.name.other.sasl.enabled.mechanisms", "PLAIN")],
            "listener.name.other.sasl.enabled.mechanisms names listener other",
        ),
        (
            vec![
                sasl,
                ("sasl.enabled.mechanisms", "SCRAM-SHA-512"),
                (
                    "listener.name.SASL_PLAINTEXT.sasl.enabled.mechanisms",
                    "SCRAM-SHA-256",
                ),
            ],
            "written in lower case",
        ),
        (
            vec![("advertised.listeners", "PLAINTEXT://a:1,PLAINTEXT://b:2")],
            "names PLAINTEXT twice",
        ),
    ] {
        let error = plan(&properties(&pairs)).unwrap_err().to_string();
        assert!(error.contains(expected), "{pairs:?}: {error}");
    }
}

#[test]
fn ipv6_addresses_are_written_in_brackets() {
    let (planned, _) = plan(&properties(&[("listeners", "PLAINTEXT://[::1]:9092")])).unwrap();
    assert_eq!(planned[0].bind, "[::1]:9092".parse().unwrap());
    assert_eq!(planned[0].listener.advertised.host, "::1");
}

#[test]
fn only_the_per_listener_keys_read_here_are_listener_keys() {
    assert!(is_listener_key(
        "listener.name.clients.sasl.enabled.mechanisms"
    ));
    assert!(is_listener_key(
        "listener.name.clients.scram-sha-512.sasl.jaas.config"
    ));
    assert!(!is_listener_key(
        "listener.name.clients.gssapi.sasl.jaas.config"
    ));
    assert!(is_listener_key(
        "listener.name.clients.ssl.keystore.location"
    ));
    assert!(!is_listener_key("listener.name.clients.ssl.bogus"));
    assert!(!is_listener_key("sasl.enabled.mechanisms"));
}
