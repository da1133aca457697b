//! The broker's key catalog (what DescribeConfigs lists) against what `serve` reads: the same
//! keys, and each default the one the broker really uses when the key is absent.

#![allow(clippy::unwrap_used, reason = "tests")]

use std::collections::{BTreeMap, BTreeSet};

use ferrolog_broker::dynamic_configs::catalog;
use ferrolog_storage::manager::{ManagerConfig, known_keys};

use super::broker_settings::broker_config;
use super::{BROKER_KEYS, tls};

#[test]
fn the_catalog_lists_exactly_the_keys_serve_accepts() {
    let accepted: BTreeSet<&str> = known_keys()
        .chain(BROKER_KEYS.iter().copied())
        .chain(tls::SSL_KEYS.iter().copied())
        .collect();
    let listed: BTreeSet<&str> = catalog::all().iter().map(|key| key.name).collect();
    assert_eq!(
        accepted.difference(&listed).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "accepted but not in the catalog"
    );
    assert_eq!(
        listed.difference(&accepted).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "in the catalog but not accepted"
    );
}

/// The broker's settings from `properties`, leaving out what only records which keys were
/// set (the properties, and the group keys DescribeConfigs names as set in the file).
fn settings(properties: &BTreeMap<String, String>) -> (ManagerConfig, String) {
    let manager = ManagerConfig::from_properties(properties).unwrap();
    let mut broker = broker_config(properties).unwrap();
    broker.properties.0.clear();
    broker.groups.consumer.set_in_properties.clear();
    broker.groups.share.set_in_properties.clear();
    (manager, format!("{broker:?}"))
}

/// What `key` is only accepted with, on both sides of the comparison.
fn companions(key: &str) -> BTreeMap<String, String> {
    let mut companions = BTreeMap::new();
    if ["super.users", "allow.everyone.if.no.acl.found"].contains(&key) {
        companions.insert(
            "authorizer.class.name".to_owned(),
            ferrolog_broker::authz::STANDARD_AUTHORIZER.to_owned(),
        );
    }
    companions
}

#[test]
fn every_default_in_the_catalog_is_the_one_in_force_when_the_key_is_absent() {
    let mut wrong = Vec::new();
    for key in catalog::all() {
        let Some(default) = key.default else {
            continue;
        };
        let base = companions(key.name);
        let absent = settings(&base);
        let mut properties = base.clone();
        properties.insert(key.name.to_owned(), default.to_owned());
        let given = std::panic::catch_unwind(|| settings(&properties));
        if given.as_ref().ok() != Some(&absent) {
            wrong.push(format!("{}={default}", key.name));
        }
    }
    assert!(
        wrong.is_empty(),
        "defaults that change the settings: {wrong:?}"
    );
}
