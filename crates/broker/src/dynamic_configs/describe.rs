//! What DescribeConfigs says of broker settings, as Kafka's `ConfigHelper` says it: each key's
//! value in force, where it comes from (`source`: this broker's dynamic value, the cluster
//! default, `server.properties`, or the built-in default), and its synonyms, the places a value
//! for it or for another name of it is set, most binding first.
//!
//! Kafka's rule for synonyms, kept here: the sources are walked in order (dynamic broker,
//! dynamic default, static, default), each over the key's names (`log.retention.ms`,
//! `log.retention.minutes`, `log.retention.hours`), and the entries before the first one of
//! the key's own name are dropped. So `log.retention.ms` unset lists nothing, though
//! `log.retention.hours` has a default, and a topic's `retention.ms` follows
//! `log.retention.ms`'s list.

use std::collections::BTreeMap;

use super::catalog::{self, Kind};
use super::{DynamicBrokerConfigs, Values};

/// Where a value comes from, numbered as Kafka's `ConfigSource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    TopicConfig = 1,
    DynamicBroker = 2,
    DynamicDefault = 3,
    Static = 4,
    Default = 5,
}

/// One place a value is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: String,
    /// `None` for a sensitive key.
    pub value: Option<String>,
    pub source: Source,
}

/// One broker setting as DescribeConfigs gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub name: String,
    /// `None` when unset without a default, or sensitive.
    pub value: Option<String>,
    pub source: Source,
    pub read_only: bool,
    pub sensitive: bool,
    /// Kafka's type; `None` for a key of no known type.
    pub kind: Option<Kind>,
    pub synonyms: Vec<Synonym>,
}

/// Each source's values, as they stand.
struct Sources<'a> {
    values: Values,
    static_configs: std::borrow::Cow<'a, BTreeMap<String, String>>,
}

impl Sources<'_> {
    /// The value of `name` from `source`, if set there.
    fn get(&self, source: Source, name: &str) -> Option<String> {
        match source {
            Source::DynamicBroker => self.values.broker.get(name).cloned(),
            Source::DynamicDefault => self.values.default.get(name).cloned(),
            Source::Static => self.static_configs.get(name).cloned(),
            Source::Default => catalog::key(name)
                .filter(|key| key.name == name)
                .and_then(|key| key.default.map(str::to_owned)),
            Source::TopicConfig => None,
        }
    }

    /// Kafka's synonyms of `name` (see the module's doc).
    fn synonyms(&self, name: &str, sensitive: bool) -> Vec<Synonym> {
        let names = catalog::synonyms(name);
        let sources = [
            Source::DynamicBroker,
            Source::DynamicDefault,
            Source::Static,
            Source::Default,
        ];
        let found = sources.iter().flat_map(|source| {
            names.iter().filter_map(|synonym| {
                self.get(*source, synonym).map(|value| Synonym {
                    name: synonym.clone(),
                    value: (!sensitive).then_some(value),
                    source: *source,
                })
            })
        });
        found.skip_while(|synonym| synonym.name != name).collect()
    }
}

impl DynamicBrokerConfigs {
    fn sources(&self) -> Sources<'_> {
        Sources {
            values: self.values(),
            static_configs: std::borrow::Cow::Borrowed(&self.static_configs),
        }
    }

    /// Every setting of this broker (resource name: its node id): each key the broker knows,
    /// and each key set (a listener's own keys, the throttles), by name.
    pub fn describe_broker(&self) -> Vec<Described> {
        let mut sources = self.sources();
        // The node's id is in force whether the file gave it or the directories did: Kafka,
        // which requires it in the file, lists it as set there.
        let node_id = self.manager.node_id().to_string();
        for key in ["node.id", "broker.id"] {
            if !sources.static_configs.contains_key(key) {
                sources
                    .static_configs
                    .to_mut()
                    .insert(key.to_owned(), node_id.clone());
            }
        }
        let mut names: Vec<String> = catalog::all()
            .iter()
            .map(|key| key.name)
            .filter(|name| !catalog::LISTED_WHEN_SET.contains(name))
            .map(str::to_owned)
            .collect();
        names.extend(sources.static_configs.keys().cloned());
        names.extend(sources.values.default.keys().cloned());
        names.extend(sources.values.broker.keys().cloned());
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|name| described(&sources, name, false))
            .collect()
    }

    /// The cluster-wide defaults (resource name empty): only the values set there.
    pub fn describe_cluster_default(&self) -> Vec<Described> {
        let sources = self.sources();
        sources
            .values
            .default
            .keys()
            .map(|name| described(&sources, name.clone(), true))
            .collect()
    }

    /// The synonyms of a topic config from the broker's side: those of the broker key that
    /// sets its default (`log.retention.ms` for `retention.ms`); empty for a topic key no
    /// broker key sets.
    pub fn topic_synonyms(&self, topic_key: &str) -> Vec<Synonym> {
        let broker_keys = ferrolog_storage::manager::broker_synonyms(topic_key);
        match broker_keys.first() {
            Some(broker_key) => self.sources().synonyms(broker_key, false),
            None => Vec::new(),
        }
    }
}

/// `name` as DescribeConfigs gives it; `default_only` for the cluster-default resource, whose
/// synonyms are its own value alone.
fn described(sources: &Sources<'_>, name: String, default_only: bool) -> Described {
    let known = catalog::key(&name);
    let throttle = catalog::THROTTLE_KEYS.contains(&name.as_str());
    let kind = known
        .map(|key| key.kind)
        .or(throttle.then_some(Kind::Long))
        .filter(|_| !catalog::UNTYPED.contains(&name.as_str()));
    // As Kafka: a key of unknown type is hidden like a password.
    let sensitive = kind.is_none_or(|kind| kind == Kind::Password);
    let mut synonyms = sources.synonyms(&name, sensitive);
    if default_only {
        synonyms.retain(|synonym| synonym.source == Source::DynamicDefault);
    }
    let value = if default_only {
        sources.get(Source::DynamicDefault, &name)
    } else {
        [
            Source::DynamicBroker,
            Source::DynamicDefault,
            Source::Static,
            Source::Default,
        ]
        .iter()
        .find_map(|source| sources.get(*source, &name))
    };
    Described {
        source: synonyms
            .first()
            .map_or(Source::Default, |first| first.source),
        value: value.filter(|_| !sensitive),
        read_only: !catalog::is_dynamic(&name),
        sensitive,
        kind,
        synonyms,
        name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources<'a>(values: Values, static_configs: &'a BTreeMap<String, String>) -> Sources<'a> {
        Sources {
            values,
            static_configs: std::borrow::Cow::Borrowed(static_configs),
        }
    }

    fn listed(synonyms: &[Synonym]) -> Vec<(String, Option<String>, Source)> {
        synonyms
            .iter()
            .map(|s| (s.name.clone(), s.value.clone(), s.source))
            .collect()
    }

    #[test]
    fn synonyms_walk_sources_then_names_and_drop_what_precedes_the_key() {
        let file: BTreeMap<String, String> =
            [("log.retention.ms".to_owned(), "600000".to_owned())].into();
        let values = Values {
            broker: BTreeMap::new(),
            default: [("log.retention.ms".to_owned(), "1000".to_owned())].into(),
        };
        let sources = sources(values, &file);
        let entry = described(&sources, "log.retention.ms".into(), false);
        assert_eq!(entry.value.as_deref(), Some("1000"));
        assert_eq!(entry.source, Source::DynamicDefault);
        assert!(!entry.read_only);
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            listed(&entry.synonyms),
            [
                (
                    "log.retention.ms".into(),
                    some("1000"),
                    Source::DynamicDefault
                ),
                ("log.retention.ms".into(), some("600000"), Source::Static),
                ("log.retention.hours".into(), some("168"), Source::Default),
            ]
        );
        // Its own name set nowhere but a longer unit's default: nothing is listed.
        let empty = BTreeMap::new();
        let unset = Sources {
            values: Values::default(),
            static_configs: std::borrow::Cow::Borrowed(&empty),
        };
        let entry = described(&unset, "log.retention.ms".into(), false);
        assert_eq!((entry.value, entry.source), (None, Source::Default));
        assert!(entry.synonyms.is_empty());
        let hours = described(&unset, "log.retention.hours".into(), false);
        assert_eq!(hours.value.as_deref(), Some("168"));
        assert!(
            hours.read_only,
            "only the first synonym changes at run time"
        );
    }

    #[test]
    fn passwords_and_keys_of_unknown_type_are_hidden() {
        let file: BTreeMap<String, String> = [
            (
                "listener.name.tls.ssl.keystore.password".to_owned(),
                "secret".to_owned(),
            ),
            (
                "listener.name.tls.ssl.keystore.type".to_owned(),
                "PKCS12".to_owned(),
            ),
        ]
        .into();
        let sources = sources(Values::default(), &file);
        let password = described(
            &sources,
            "listener.name.tls.ssl.keystore.password".into(),
            false,
        );
        assert!(password.sensitive);
        assert_eq!(password.value, None);
        assert!(
            password
                .synonyms
                .iter()
                .all(|synonym| synonym.value.is_none())
        );
        let kind = described(
            &sources,
            "listener.name.tls.ssl.keystore.type".into(),
            false,
        );
        assert_eq!(kind.value.as_deref(), Some("PKCS12"));
        assert_eq!(
            listed(&kind.synonyms),
            [
                (
                    "listener.name.tls.ssl.keystore.type".into(),
                    Some("PKCS12".into()),
                    Source::Static
                ),
                (
                    "ssl.keystore.type".into(),
                    Some("JKS".into()),
                    Source::Default
                ),
            ]
        );
    }
}
