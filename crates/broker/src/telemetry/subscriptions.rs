//! Client-metrics subscriptions (KIP-714), as Kafka 4.4's client-metrics config resources: each
//! names the metrics it asks for (`metrics`, prefixes of metric names, `*` for all), how often
//! they are pushed (`interval.ms`) and which clients it applies to (`match`, `key=regex`
//! entries, all of which must match). These are the rules alone: checking a subscription's
//! values with Kafka's messages, and resolving what one client is asked for. Pure functions.

use std::collections::BTreeMap;

use regex::Regex;

use crate::errors;

pub const METRICS: &str = "metrics";
pub const INTERVAL_MS: &str = "interval.ms";
pub const MATCH: &str = "match";

/// `interval.ms` when a subscription does not set it, and the interval a client with no
/// subscription re-asks at.
pub const DEFAULT_INTERVAL_MS: i32 = 300_000;
const MIN_INTERVAL_MS: i32 = 100;
const MAX_INTERVAL_MS: i32 = 3_600_000;

/// What a `match` entry may test, as Kafka names a client's attributes.
pub const ATTRIBUTES: [&str; 6] = [
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
];

/// One client's attributes, in the order of [`ATTRIBUTES`].
pub type ClientAttributes = [String; 6];

/// A subscription's values, as stored (see [`normalized`]).
pub type Values = BTreeMap<String, String>;

/// A checked subscription, ready to match clients.
#[derive(Debug, Clone)]
pub struct Subscription {
    metrics: Vec<String>,
    interval_ms: i32,
    /// (index into [`ATTRIBUTES`], the whole-value pattern).
    matches: Vec<(usize, Regex)>,
}

/// What one client is asked for: the union of its subscriptions' metrics (just `*` when one
/// asks for all) at the shortest of their intervals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub metrics: Vec<String>,
    pub interval_ms: i32,
}

/// A list value as Kafka's LIST type reads it: split at commas, each entry trimmed; an empty
/// (or blank) value is the empty list.
fn list(value: &str) -> Vec<String> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value
        .split(',')
        .map(|entry| entry.trim().to_owned())
        .collect()
}

/// Checks a subscription's whole set of values, as Kafka's controller does; the refusal is
/// Kafka's error code and message.
pub fn validate(name: &str, values: &Values) -> Result<Subscription, (i16, String)> {
    if name.is_empty() {
        return Err((
            errors::INVALID_REQUEST,
            "Subscription name can't be empty".to_owned(),
        ));
    }
    if let Some(unknown) = values
        .keys()
        .find(|key| ![METRICS, INTERVAL_MS, MATCH].contains(&key.as_str()))
    {
        return Err((
            errors::INVALID_REQUEST,
            format!("Unknown client metrics configuration: {unknown}"),
        ));
    }
    let metrics = list(values.get(METRICS).map_or("", String::as_str));
    if metrics.iter().any(String::is_empty) {
        return Err((
            errors::INVALID_CONFIG,
            "Configuration 'metrics' values must not be empty.".to_owned(),
        ));
    }
    let interval_ms = match values.get(INTERVAL_MS) {
        None => DEFAULT_INTERVAL_MS,
        Some(raw) => interval(raw)?,
    };
    let matches = list(values.get(MATCH).map_or("", String::as_str))
        .iter()
        .map(|entry| pattern(entry))
        .collect::<Result<_, _>>()?;
    Ok(Subscription {
        metrics,
        interval_ms,
        matches,
    })
}

fn interval(raw: &str) -> Result<i32, (i16, String)> {
    let value: i32 = raw.trim().parse().map_err(|_| {
        (
            errors::INVALID_CONFIG,
            format!(
                "Invalid value {raw} for configuration {INTERVAL_MS}: Not a number of type INT"
            ),
        )
    })?;
    if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&value) {
        return Err((
            errors::INVALID_REQUEST,
            format!(
                "Invalid value {value} for {INTERVAL_MS}, interval must be between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)"
            ),
        ));
    }
    Ok(value)
}

/// One `match` entry: exactly one `=`, a known attribute, a non-empty pattern that compiles.
fn pattern(entry: &str) -> Result<(usize, Regex), (i16, String)> {
    let illegal = || {
        (
            errors::INVALID_CONFIG,
            format!("Illegal client matching pattern: {entry}"),
        )
    };
    let parts: Vec<&str> = entry.split('=').collect();
    let [key, pattern] = parts[..] else {
        return Err(illegal());
    };
    let (key, pattern) = (key.trim(), pattern.trim());
    let attribute = ATTRIBUTES
        .iter()
        .position(|known| *known == key)
        .ok_or_else(illegal)?;
    if pattern.is_empty() {
        return Err(illegal());
    }
    // Kafka matches the whole value (Java's `Matcher.matches`).
    let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(|_| illegal())?;
    Ok((attribute, whole))
}

/// The values as kept and described: lists with their entries trimmed and joined by commas,
/// the interval as a number. Call on values [`validate`] accepted.
pub fn normalized(values: &Values) -> Values {
    values
        .iter()
        .map(|(key, value)| {
            let kept = if key == INTERVAL_MS {
                value.trim().to_owned()
            } else {
                list(value).join(",")
            };
            (key.clone(), kept)
        })
        .collect()
}

impl Subscription {
    fn matches(&self, client: &ClientAttributes) -> bool {
        self.matches
            .iter()
            .all(|(attribute, pattern)| pattern.is_match(&client[*attribute]))
    }
}

/// What `client` is asked for by the subscriptions that match it; with none, nothing, re-asked
/// at the default interval.
pub fn resolve<'a>(
    subscriptions: impl IntoIterator<Item = &'a Subscription>,
    client: &ClientAttributes,
) -> Resolved {
    let mut metrics = std::collections::BTreeSet::new();
    let mut interval_ms = DEFAULT_INTERVAL_MS;
    for subscription in subscriptions {
        if subscription.matches(client) {
            metrics.extend(subscription.metrics.iter().cloned());
            interval_ms = interval_ms.min(subscription.interval_ms);
        }
    }
    let metrics = if metrics.contains("*") {
        vec!["*".to_owned()]
    } else {
        metrics.into_iter().collect()
    };
    Resolved {
        metrics,
        interval_ms,
    }
}

/// The id of what a client is asked for, as Kafka computes it: the CRC32C of the metrics (as
/// Java prints a set, `[a, b]`) followed by the interval, XORed with the hash Java gives the
/// client's instance id. Kafka prints the set in its hash order, ferrolog in sorted order, so
/// the ids of a client asked for several prefixes differ between the two; the id only has to
/// stay the same between one broker's answers.
pub fn subscription_id(resolved: &Resolved, instance: uuid::Uuid) -> i32 {
    let text = format!("[{}]{}", resolved.metrics.join(", "), resolved.interval_ms);
    let crc = ferrolog_records::batch::crc32c(text.as_bytes()) as i32;
    let (high, low) = instance.as_u64_pair();
    let bits = high ^ low;
    let java_hash = ((bits >> 32) as i32) ^ (bits as i32);
    crc ^ java_hash
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> Values {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn refusal(pairs: &[(&str, &str)]) -> (i16, String) {
        validate("sub", &values(pairs)).unwrap_err()
    }

    #[test]
    fn values_kafka_refuses_are_refused_with_its_messages() {
        assert_eq!(
            validate("", &Values::new()).unwrap_err(),
            (42, "Subscription name can't be empty".to_owned())
        );
        assert_eq!(
            refusal(&[("foo", "1")]),
            (42, "Unknown client metrics configuration: foo".to_owned())
        );
        assert_eq!(
            refusal(&[("interval.ms", "50")]),
            (
                42,
                "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"
                    .to_owned()
            )
        );
        assert_eq!(
            refusal(&[("interval.ms", "abc")]),
            (
                40,
                "Invalid value abc for configuration interval.ms: Not a number of type INT"
                    .to_owned()
            )
        );
        assert_eq!(
            refusal(&[("metrics", "a,,b")]),
            (
                40,
                "Configuration 'metrics' values must not be empty.".to_owned()
            )
        );
        for entry in [
            "client_id=",
            "client_id",
            "a=b=c",
            "colour=red",
            "client_id=(",
        ] {
            assert_eq!(
                refusal(&[("match", entry)]),
                (40, format!("Illegal client matching pattern: {entry}")),
                "{entry}"
            );
        }
        assert!(validate("sub", &values(&[("metrics", "a,a"), ("match", "")])).is_ok());
    }

    #[test]
    fn lists_are_kept_trimmed_as_kafka_describes_them() {
        let kept = normalized(&values(&[
            ("match", " client_id = x , client_software_name=y "),
            ("interval.ms", " 1000"),
        ]));
        assert_eq!(kept["match"], "client_id = x,client_software_name=y");
        assert_eq!(kept["interval.ms"], "1000");
    }

    fn client(id: &str, software: &str) -> ClientAttributes {
        [
            "AAAAAAAAAAAAAAAAAAAAAA".to_owned(),
            id.to_owned(),
            software.to_owned(),
            "4.4.0".to_owned(),
            "127.0.0.1".to_owned(),
            "50000".to_owned(),
        ]
    }

    #[test]
    fn a_client_gets_the_union_of_what_matches_it_at_the_shortest_interval() {
        let producers = validate(
            "p",
            &values(&[
                ("metrics", "org.apache.kafka.producer."),
                ("interval.ms", "2000"),
                (
                    "match",
                    "client_software_name=apache-kafka-java, client_id=app-.*",
                ),
            ]),
        )
        .unwrap();
        let everything = validate(
            "all",
            &values(&[("metrics", "a.,b."), ("interval.ms", "5000")]),
        )
        .unwrap();
        let java = client("app-1", "apache-kafka-java");
        assert_eq!(
            resolve([&producers, &everything], &java),
            Resolved {
                metrics: vec![
                    "a.".to_owned(),
                    "b.".to_owned(),
                    "org.apache.kafka.producer.".to_owned()
                ],
                interval_ms: 2000
            }
        );
        // The whole value must match: "app-1x" matches `app-.*`, "my-app-1" does not.
        let other = client("my-app-1", "apache-kafka-java");
        assert_eq!(resolve([&producers], &other).metrics, Vec::<String>::new());
        assert_eq!(
            resolve([&producers], &other).interval_ms,
            DEFAULT_INTERVAL_MS
        );
        let star = validate("star", &values(&[("metrics", "x.,*")])).unwrap();
        assert_eq!(resolve([&star, &everything], &java).metrics, vec!["*"]);
    }

    fn instance(base64: &str) -> uuid::Uuid {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(base64)
            .unwrap();
        uuid::Uuid::from_slice(&bytes).unwrap()
    }

    #[test]
    fn subscription_ids_are_the_ones_kafka_gave_the_same_clients() {
        let resolved = |metrics: &[&str], interval_ms| Resolved {
            metrics: metrics.iter().map(|m| (*m).to_owned()).collect(),
            interval_ms,
        };
        // Answers of Kafka 4.4 to GetTelemetrySubscriptions.
        assert_eq!(
            subscription_id(&resolved(&[], 300_000), instance("EbL7k1GdTvC6DaVfMEtthA")),
            514_729_574
        );
        assert_eq!(
            subscription_id(&resolved(&["*"], 100), instance("GGhvxcDdQKuepi3ouS3yzQ")),
            -895_480_598
        );
        assert_eq!(
            subscription_id(
                &resolved(&["org.apache.kafka.producer."], 2000),
                instance("96ouplvmS7O0L1TsVaGI0Q")
            ),
            114_210_152
        );
    }
}
