//! The features this broker serves and Kafka's rules for changing their finalized levels
//! (UpdateFeatures, as Kafka 4.4's controller checks it): pure functions over the current
//! levels, tested without a broker.

use std::collections::BTreeMap;

/// A feature this broker serves: its name, the levels it supports and what a new node
/// finalizes it at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub min: i16,
    pub max: i16,
    /// The level a new node starts with (transaction.version's comes from the settings).
    pub default_level: i16,
}

/// `group.version`: 1 serves KIP-848 consumer groups.
pub const GROUP_VERSION: &str = "group.version";
/// `share.version`: 1 serves KIP-932 share groups.
pub const SHARE_VERSION: &str = "share.version";
/// `streams.version`: 1 serves KIP-1071 streams groups.
pub const STREAMS_VERSION: &str = "streams.version";
/// `transaction.version`: 2 lets clients use transactions v2 (KIP-890).
pub const TRANSACTION_VERSION: &str = "transaction.version";

/// Every feature served, by name (the order `kafka-features describe` lists them in).
pub const FEATURES: [Feature; 4] = [
    Feature {
        name: GROUP_VERSION,
        min: 0,
        max: 1,
        default_level: 1,
    },
    Feature {
        name: SHARE_VERSION,
        min: 0,
        max: 1,
        default_level: 1,
    },
    Feature {
        name: STREAMS_VERSION,
        min: 0,
        max: 1,
        default_level: 1,
    },
    Feature {
        name: TRANSACTION_VERSION,
        min: 0,
        max: 2,
        default_level: 2,
    },
];

/// The feature named `name`, if served.
pub fn feature(name: &str) -> Option<&'static Feature> {
    FEATURES.iter().find(|feature| feature.name == name)
}

/// How UpdateFeatures may move a level (its `UpgradeType`; v0's `AllowDowngrade` is ignored,
/// as Kafka ignores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradeType {
    Upgrade,
    SafeDowngrade,
    UnsafeDowngrade,
    Unknown,
}

impl UpgradeType {
    /// The request's code: 1, 2, 3; anything else is unknown.
    pub fn of(code: i8) -> Self {
        match code {
            1 => Self::Upgrade,
            2 => Self::SafeDowngrade,
            3 => Self::UnsafeDowngrade,
            _ => Self::Unknown,
        }
    }
}

/// One change asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub feature: String,
    pub level: i16,
    pub upgrade_type: UpgradeType,
}

/// The levels after `updates`, all or nothing, as Kafka's controller decides them: each name's
/// last update is checked, in name order, against the levels before the request, and the
/// first refused refuses the whole request with its message. `node_id` names this node in Kafka's messages. Level 0
/// removes a feature from the finalized ones.
pub fn apply(
    current: &BTreeMap<String, i16>,
    updates: &[Update],
    node_id: i32,
) -> Result<BTreeMap<String, i16>, String> {
    // As Kafka's controller, which keys the updates by name: the last of a name wins, and
    // they are checked in name order.
    let by_name: BTreeMap<&str, &Update> = updates
        .iter()
        .map(|update| (update.feature.as_str(), update))
        .collect();
    let mut next = current.clone();
    for update in by_name.into_values() {
        let now = current.get(&update.feature).copied().unwrap_or(0);
        check(update, now, node_id).map_err(|reason| {
            format!(
                "Invalid update version {} for feature {}. {reason}",
                update.level, update.feature
            )
        })?;
        if update.level == 0 {
            next.remove(&update.feature);
        } else {
            next.insert(update.feature.clone(), update.level);
        }
    }
    Ok(next)
}

/// Kafka's checks of one update, in its order; the reason it is refused.
fn check(update: &Update, now: i16, node_id: i32) -> Result<(), String> {
    if update.upgrade_type == UpgradeType::Unknown {
        return Err("The controller does not support the given upgrade type.".to_owned());
    }
    if update.level < 0 {
        return Err("A feature version cannot be less than 0.".to_owned());
    }
    let served = feature(&update.feature);
    match served {
        None if update.level > 0 => {
            return Err(format!(
                "Local controller {node_id} does not support this feature."
            ));
        }
        Some(served) if !(served.min..=served.max).contains(&update.level) => {
            let range = if served.min == served.max {
                served.min.to_string()
            } else {
                format!("{}-{}", served.min, served.max)
            };
            return Err(format!(
                "Local controller {node_id} only supports versions {range}"
            ));
        }
        _ => {}
    }
    match update.upgrade_type {
        UpgradeType::Upgrade if update.level < now => {
            return Err("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.".to_owned());
        }
        UpgradeType::SafeDowngrade | UpgradeType::UnsafeDowngrade if update.level > now => {
            return Err("Can't downgrade to a newer version.".to_owned());
        }
        _ => {}
    }
    match served {
        None => Err(format!("Feature {} not found.", update.feature)),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(feature: &str, level: i16, upgrade_type: UpgradeType) -> Update {
        Update {
            feature: feature.to_owned(),
            level,
            upgrade_type,
        }
    }

    fn levels(pairs: &[(&str, i16)]) -> BTreeMap<String, i16> {
        pairs
            .iter()
            .map(|(name, level)| ((*name).to_owned(), *level))
            .collect()
    }

    #[test]
    fn upgrades_and_downgrades_move_the_levels() {
        let now = levels(&[(GROUP_VERSION, 1), (TRANSACTION_VERSION, 2)]);
        let next = apply(
            &now,
            &[
                update(TRANSACTION_VERSION, 1, UpgradeType::SafeDowngrade),
                update(GROUP_VERSION, 0, UpgradeType::UnsafeDowngrade),
                update(SHARE_VERSION, 1, UpgradeType::Upgrade),
                update(STREAMS_VERSION, 0, UpgradeType::Upgrade),
            ],
            1,
        )
        .unwrap();
        assert_eq!(
            next,
            levels(&[(SHARE_VERSION, 1), (TRANSACTION_VERSION, 1)])
        );
        // The same level again is an upgrade that changes nothing.
        let same = [update(TRANSACTION_VERSION, 2, UpgradeType::Upgrade)];
        assert_eq!(apply(&now, &same, 1).unwrap(), now);
    }

    #[test]
    fn refusals_carry_kafkas_messages_and_change_nothing() {
        let now = levels(&[(GROUP_VERSION, 1), (TRANSACTION_VERSION, 2)]);
        let refused = |updates: &[Update]| apply(&now, updates, 7).unwrap_err();
        assert_eq!(
            refused(&[update(TRANSACTION_VERSION, 1, UpgradeType::Upgrade)]),
            "Invalid update version 1 for feature transaction.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
        );
        assert_eq!(
            refused(&[update(SHARE_VERSION, 1, UpgradeType::SafeDowngrade)]),
            "Invalid update version 1 for feature share.version. Can't downgrade to a newer version."
        );
        assert_eq!(
            refused(&[update(TRANSACTION_VERSION, 3, UpgradeType::Upgrade)]),
            "Invalid update version 3 for feature transaction.version. Local controller 7 only supports versions 0-2"
        );
        assert_eq!(
            refused(&[update("metadata.version", 30, UpgradeType::Upgrade)]),
            "Invalid update version 30 for feature metadata.version. Local controller 7 does not support this feature."
        );
        assert_eq!(
            refused(&[update("nope", 0, UpgradeType::Upgrade)]),
            "Invalid update version 0 for feature nope. Feature nope not found."
        );
        assert_eq!(
            refused(&[update(GROUP_VERSION, -1, UpgradeType::Upgrade)]),
            "Invalid update version -1 for feature group.version. A feature version cannot be less than 0."
        );
        assert_eq!(
            refused(&[update(GROUP_VERSION, 1, UpgradeType::Unknown)]),
            "Invalid update version 1 for feature group.version. The controller does not support the given upgrade type."
        );
        // All or nothing: a good update before a refused one is not kept.
        let mixed = [
            update(SHARE_VERSION, 1, UpgradeType::Upgrade),
            update(GROUP_VERSION, 5, UpgradeType::Upgrade),
        ];
        assert!(apply(&now, &mixed, 7).is_err());
    }
}
