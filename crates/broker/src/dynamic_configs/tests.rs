use super::*;

fn set(key: &str, value: &str) -> Change {
    Change::Set(key.to_owned(), value.to_owned())
}

fn message(refused: Refused) -> String {
    assert_eq!(
        refused.code,
        crate::errors::INVALID_REQUEST,
        "{}",
        refused.message
    );
    refused.message
}

#[test]
fn changes_land_in_their_scope_and_delete_uncovers_nothing_else() {
    let values = next_values(
        &Values::default(),
        Scope::ClusterDefault,
        &[set("log.retention.ms", "1000"), set(MOVE_RATE, "50")],
    )
    .unwrap();
    assert_eq!(values.default.get("log.retention.ms").unwrap(), "1000");
    assert!(values.broker.is_empty());
    let values = next_values(
        &values,
        Scope::Broker,
        &[
            set("log.retention.ms", "7"),
            Change::Delete("log.segment.bytes".into()),
        ],
    )
    .unwrap();
    assert_eq!(values.broker.get("log.retention.ms").unwrap(), "7");
    assert_eq!(values.default.get("log.retention.ms").unwrap(), "1000");
    let values = next_values(
        &values,
        Scope::Broker,
        &[Change::Delete("log.retention.ms".into())],
    )
    .unwrap();
    assert!(values.broker.is_empty());
}

#[test]
fn refusals_are_kafkas_in_kafkas_order() {
    let refuse = |changes: &[Change]| {
        message(next_values(&Values::default(), Scope::Broker, changes).unwrap_err())
    };
    assert_eq!(
        refuse(&[set("log.retention.hours", "3"), set("log.dirs", "/x")]),
        "Cannot update these configs dynamically: [log.retention.hours, log.dirs]"
    );
    assert_eq!(
        refuse(&[set("ssl.keystore.location", "/k")]),
        "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"
    );
    assert_eq!(
        refuse(&[set("log.retention.ms", "abc")]),
        "Invalid value abc for configuration log.retention.ms: Not a number of type LONG"
    );
    assert_eq!(
        refuse(&[set("foo.bar", "1")]),
        "These are not broker configs ferrolog knows: [foo.bar]"
    );
    // Kafka's order: what cannot change first, then store keys without a prefix, then (ferrolog)
    // unknown keys; an APPEND to a key that is no list before all of them.
    assert_eq!(
        refuse(&[
            set("ssl.keystore.location", "/k"),
            set("foo.bar", "1"),
            set("log.dirs", "/x")
        ]),
        "Cannot update these configs dynamically: [log.dirs]"
    );
    assert_eq!(
        refuse(&[set("foo.bar", "1"), set("ssl.keystore.location", "/k")]),
        "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"
    );
    let append = next_values(
        &Values::default(),
        Scope::Broker,
        &[
            set("log.dirs", "/x"),
            Change::Append("log.retention.ms".into(), "1".into()),
        ],
    )
    .unwrap_err();
    assert_eq!(append.code, crate::errors::INVALID_CONFIG);
    // A listener's store only on the broker itself, never at the cluster default.
    let store = "listener.name.ssl.ssl.keystore.location";
    assert!(next_values(&Values::default(), Scope::Broker, &[set(store, "/k")]).is_ok());
    assert_eq!(
        message(
            next_values(
                &Values::default(),
                Scope::ClusterDefault,
                &[set(store, "/k")]
            )
            .unwrap_err()
        ),
        format!(
            "Cannot update these configs at default cluster level, broker id must be specified: [{store}]"
        )
    );
    // Deleting what is not set, of any key, changes nothing and is no error.
    assert_eq!(
        next_values(
            &Values::default(),
            Scope::Broker,
            &[Change::Delete("log.dirs".into())]
        )
        .unwrap(),
        Values::default()
    );
}

#[test]
fn lists_take_appends_and_subtractions_other_keys_refuse_them() {
    let values = next_values(
        &Values::default(),
        Scope::ClusterDefault,
        &[Change::Append(
            "log.cleanup.policy".into(),
            "compact, delete".into(),
        )],
    )
    .unwrap();
    assert_eq!(
        values.default.get("log.cleanup.policy").unwrap(),
        "delete,compact"
    );
    let values = next_values(
        &values,
        Scope::ClusterDefault,
        &[Change::Subtract(
            "log.cleanup.policy".into(),
            "delete".into(),
        )],
    )
    .unwrap();
    assert_eq!(values.default.get("log.cleanup.policy").unwrap(), "compact");
    let refused = next_values(
        &values,
        Scope::ClusterDefault,
        &[Change::Append("log.retention.ms".into(), "1".into())],
    )
    .unwrap_err();
    assert_eq!(refused.code, crate::errors::INVALID_CONFIG);
    assert_eq!(
        refused.message,
        "Config value append is not allowed for config key: log.retention.ms"
    );
}

#[test]
fn the_body_reads_back_what_was_written_and_damage_names_its_line() {
    let values = Values {
        broker: [("log.retention.ms".to_owned(), "1000".to_owned())].into(),
        default: [
            ("log.cleanup.policy".to_owned(), "compact,delete".to_owned()),
            ("compression.type".to_owned(), String::new()),
        ]
        .into(),
    };
    let body = render(&values);
    assert_eq!(parse(&body).unwrap(), values);
    assert_eq!(parse("broker a 1\nnowhere a 1\n").unwrap_err().0, 1);
    assert_eq!(parse("broker a\n").unwrap_err().0, 0);
}
