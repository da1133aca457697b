use std::time::{Duration, Instant};

use uuid::Uuid;

use super::*;
use crate::telemetry::otlp::{self, Kind};
use crate::telemetry::subscriptions::{ClientAttributes, Resolved};

const LIMITS: Limits = Limits {
    max_instances: 3,
    max_push_bytes: 1 << 20,
    max_retained_bytes: 4096,
};

fn client(_: Uuid) -> ClientAttributes {
    [
        "id".to_owned(),
        "app".to_owned(),
        "apache-kafka-java".to_owned(),
        "4.4.0".to_owned(),
        "127.0.0.1".to_owned(),
        "1".to_owned(),
    ]
}

fn every_second(_: &ClientAttributes) -> Resolved {
    Resolved {
        metrics: vec!["org.apache.kafka.".to_owned()],
        interval_ms: 1000,
    }
}

const SUBSCRIBED: (u64, &dyn Fn(&ClientAttributes) -> Resolved) = (1, &every_second);

fn points(value: f64) -> Result<Vec<otlp::Point>, i16> {
    let payload = otlp::payload::metrics_data(
        &[],
        &[(
            "org.apache.kafka.producer.record.send.total",
            true,
            &[],
            value,
        )],
    );
    Ok(otlp::decode(&payload, &["*".to_owned()], usize::MAX).unwrap_or_default())
}

/// A whole push: admitted, then completed with `read`.
fn pushed(
    instances: &mut ClientInstances,
    now: Instant,
    push: Push,
    read: Result<Vec<otlp::Point>, i16>,
) -> i16 {
    match instances.admit_push(now, push, client, SUBSCRIBED) {
        Ok(admitted) => instances.complete_push(admitted.instance, read),
        Err(code) => code,
    }
}

fn push(told: &Subscribed, terminating: bool) -> Push {
    Push {
        instance: told.instance,
        subscription_id: told.subscription_id,
        terminating,
    }
}

fn totals(instances: &mut ClientInstances, now: Instant) -> Vec<f64> {
    let mut seen = Vec::new();
    instances.for_each_series(now, |_, kind, labels, value| {
        assert_eq!(kind, Kind::Delta);
        assert_eq!(labels[1], ("client_id".to_owned(), "app".to_owned()));
        seen.push(value);
    });
    seen
}

#[test]
fn a_client_asks_and_pushes_at_its_interval_and_its_deltas_add_up() {
    let start = Instant::now();
    let at = |ms| start + Duration::from_millis(ms);
    let mut instances = ClientInstances::new(LIMITS);
    let told = instances
        .get_subscriptions(at(0), Uuid::nil(), client, SUBSCRIBED)
        .unwrap();
    assert!(!told.instance.is_nil());
    assert_eq!(told.resolved.interval_ms, 1000);
    // Asking again within the interval is refused; the first push after asking is not.
    assert_eq!(
        instances.get_subscriptions(at(10), told.instance, client, SUBSCRIBED),
        Err(errors::THROTTLING_QUOTA_EXCEEDED)
    );
    let first = pushed(&mut instances, at(20), push(&told, false), points(3.0));
    assert_eq!(first, errors::NONE);
    let early = pushed(&mut instances, at(500), push(&told, false), points(1.0));
    assert_eq!(early, errors::THROTTLING_QUOTA_EXCEEDED);
    let next = pushed(&mut instances, at(1020), push(&told, false), points(4.0));
    assert_eq!(next, errors::NONE);
    assert_eq!(totals(&mut instances, at(1030)), vec![7.0]);
    // A stale subscription id is refused; the client may then ask again at once.
    let stale = Push {
        subscription_id: told.subscription_id ^ 1,
        ..push(&told, false)
    };
    assert_eq!(
        pushed(&mut instances, at(2100), stale, points(1.0)),
        errors::UNKNOWN_SUBSCRIPTION_ID
    );
    assert!(
        instances
            .get_subscriptions(at(2110), told.instance, client, SUBSCRIBED)
            .is_ok()
    );
    // The last push of a terminating client is taken at once; the next is refused, and clears
    // the flag, as Kafka's.
    let last = pushed(&mut instances, at(2120), push(&told, true), points(1.0));
    assert_eq!(last, errors::NONE);
    let after = pushed(&mut instances, at(9000), push(&told, false), points(1.0));
    assert_eq!(after, errors::INVALID_REQUEST);
    // The refused push was not counted against the rate: the one after goes through.
    let again = pushed(&mut instances, at(9001), push(&told, false), points(1.0));
    assert_eq!(again, errors::NONE);
    let soon = pushed(&mut instances, at(9002), push(&told, false), points(1.0));
    assert_eq!(soon, errors::THROTTLING_QUOTA_EXCEEDED);
}

#[test]
fn changed_subscriptions_are_told_at_once() {
    let start = Instant::now();
    let mut instances = ClientInstances::new(LIMITS);
    let told = instances
        .get_subscriptions(start, Uuid::nil(), client, SUBSCRIBED)
        .unwrap();
    let everything = |_: &ClientAttributes| Resolved {
        metrics: vec!["*".to_owned()],
        interval_ms: 100,
    };
    let again = instances
        .get_subscriptions(start, told.instance, client, (2, &everything))
        .unwrap();
    assert_eq!(again.resolved.metrics, vec!["*"]);
    assert_ne!(again.subscription_id, told.subscription_id);
}

#[test]
fn silent_instances_are_forgotten_as_others_ask_without_a_scrape() {
    let start = Instant::now();
    let mut instances = ClientInstances::new(LIMITS);
    let told = instances
        .get_subscriptions(start, Uuid::nil(), client, SUBSCRIBED)
        .unwrap();
    assert_eq!(
        pushed(&mut instances, start, push(&told, false), points(1.0)),
        errors::NONE
    );
    assert!(instances.retained_bytes() > 0);
    // Another client asks a minute later: the silent one goes, with its bytes.
    instances
        .get_subscriptions(
            start + Duration::from_secs(61),
            Uuid::nil(),
            client,
            SUBSCRIBED,
        )
        .unwrap();
    assert_eq!(instances.retained_bytes(), 0);
}

#[test]
fn instances_are_forgotten_when_silent_or_when_too_many() {
    let start = Instant::now();
    let mut instances = ClientInstances::new(LIMITS);
    let mut ids = Vec::new();
    for n in 0..4 {
        let told = instances
            .get_subscriptions(start, Uuid::nil(), client, SUBSCRIBED)
            .unwrap();
        let code = pushed(
            &mut instances,
            start + Duration::from_millis(n),
            push(&told, false),
            points(1.0),
        );
        assert_eq!(code, errors::NONE);
        ids.push(told.instance);
    }
    // Three are kept: the first was the least recently heard from.
    assert_eq!(totals(&mut instances, start).len(), 3);
    // A minute of silence (three intervals are less) forgets every one, and its bytes.
    assert_eq!(
        totals(&mut instances, start + Duration::from_secs(61)).len(),
        0
    );
    assert_eq!(instances.retained_bytes(), 0);
}

#[test]
fn pushes_past_the_retained_bytes_are_refused_and_the_nil_id_is_invalid() {
    let start = Instant::now();
    let tight = Limits {
        max_retained_bytes: 100,
        ..LIMITS
    };
    let mut instances = ClientInstances::new(tight);
    let told = instances
        .get_subscriptions(start, Uuid::nil(), client, SUBSCRIBED)
        .unwrap();
    let code = pushed(&mut instances, start, push(&told, false), points(1.0));
    assert_eq!(code, errors::THROTTLING_QUOTA_EXCEEDED);
    assert_eq!(instances.retained_bytes(), 0);
    let nil = Push {
        instance: Uuid::nil(),
        ..push(&told, false)
    };
    assert_eq!(
        pushed(&mut instances, start, nil, points(1.0)),
        errors::INVALID_REQUEST
    );
}
