//! Which quota applies to a client, as Kafka's default quota callback decides
//! (`ClientQuotaManager.DefaultQuotaCallback`): for one key, the most specific of the eight
//! levels that is set, from (user, client id) down to the default client id; and the tags of
//! the sensor the client is measured by, which every client under the same quota shares (all
//! of alice's client ids, under a quota on user alice alone).

use std::collections::HashMap;

use super::entity::{EntityName, QuotaEntity, QuotaKey};
use super::store::Quotas;

/// A sensor's tags: the user and the client id it measures, either empty where the quota that
/// applies does not name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SensorTags {
    pub user: String,
    pub client_id: String,
}

/// The quota a client is under: its bound and its sensor's tags.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub limit: f64,
    pub tags: SensorTags,
}

type Level = (Option<EntityName>, Option<EntityName>);

/// One key's quotas by level, as the client quota manager of its kind holds them.
#[derive(Debug, Clone, Default)]
pub struct KeyQuotas {
    /// By (user, client id) part.
    by_entity: HashMap<Level, f64>,
    /// Whether some quota names a user only, a client id only, or both.
    user_only: bool,
    client_only: bool,
    user_and_client: bool,
}

impl KeyQuotas {
    /// `key`'s quotas among `quotas`.
    pub fn of(quotas: &Quotas, key: QuotaKey) -> Self {
        let mut held = Self::default();
        for (entity, values) in quotas {
            let Some(&limit) = values.get(&key) else {
                continue;
            };
            let QuotaEntity {
                user,
                client_id,
                ip: None,
            } = entity
            else {
                continue;
            };
            match (user, client_id) {
                (Some(_), Some(_)) => held.user_and_client = true,
                (Some(_), None) => held.user_only = true,
                (None, Some(_)) => held.client_only = true,
                (None, None) => continue,
            }
            held.by_entity
                .insert((user.clone(), client_id.clone()), limit);
        }
        held
    }

    /// Whether no quota of this key is set: nothing needs measuring.
    pub fn is_empty(&self) -> bool {
        self.by_entity.is_empty()
    }

    /// The quota `user` (the principal's name) with `client_id` is under, if any.
    pub fn applied(&self, user: &str, client_id: &str) -> Option<Applied> {
        if self.by_entity.is_empty() {
            return None;
        }
        let tags = self.tags(user, client_id);
        let limit = self.limit(&tags)?;
        Some(Applied { limit, tags })
    }

    fn get(&self, user: Option<&EntityName>, client: Option<&EntityName>) -> Option<f64> {
        self.by_entity
            .get(&(user.cloned(), client.cloned()))
            .copied()
    }

    /// The sensor's tags for a client, as Kafka's `quotaMetricTags` picks them.
    fn tags(&self, user: &str, client_id: &str) -> SensorTags {
        let both = || SensorTags {
            user: user.to_owned(),
            client_id: client_id.to_owned(),
        };
        let user_tag = || SensorTags {
            user: user.to_owned(),
            client_id: String::new(),
        };
        let client_tag = || SensorTags {
            user: String::new(),
            client_id: client_id.to_owned(),
        };
        match (self.user_only, self.client_only, self.user_and_client) {
            (false, _, false) => return client_tag(),
            (true, false, false) => return user_tag(),
            (false, false, true) => return both(),
            _ => {}
        }
        let named_user = EntityName::Named(user.to_owned());
        let named_client = EntityName::Named(client_id.to_owned());
        let (default, u, c) = (EntityName::Default, &named_user, &named_client);
        if self.get(Some(u), Some(c)).is_some() || self.get(Some(u), Some(&default)).is_some() {
            both()
        } else if self.get(Some(u), None).is_some() {
            user_tag()
        } else if self.get(Some(&default), Some(c)).is_some()
            || self.get(Some(&default), Some(&default)).is_some()
        {
            both()
        } else if self.get(Some(&default), None).is_some() {
            user_tag()
        } else {
            client_tag()
        }
    }

    /// The bound for a sensor's tags, as Kafka's `quotaLimit` finds it.
    fn limit(&self, tags: &SensorTags) -> Option<f64> {
        let default = EntityName::Default;
        let user = EntityName::Named(tags.user.clone());
        let client = EntityName::Named(tags.client_id.clone());
        match (tags.user.is_empty(), tags.client_id.is_empty()) {
            (false, false) => self
                .get(Some(&user), Some(&client))
                .or_else(|| self.get(Some(&user), Some(&default)))
                .or_else(|| self.get(Some(&default), Some(&client)))
                .or_else(|| self.get(Some(&default), Some(&default))),
            (false, true) => self
                .get(Some(&user), None)
                .or_else(|| self.get(Some(&default), None)),
            (true, false) => self
                .get(None, Some(&client))
                .or_else(|| self.get(None, Some(&default))),
            (true, true) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quotas::QuotaValues;

    fn name(text: &str) -> Option<EntityName> {
        Some(match text {
            "*" => EntityName::Default,
            named => EntityName::Named(named.to_owned()),
        })
    }

    fn quotas(entries: &[(Option<&str>, Option<&str>, f64)]) -> KeyQuotas {
        let quotas: Quotas = entries
            .iter()
            .map(|(user, client, limit)| {
                let entity = QuotaEntity {
                    user: user.and_then(name),
                    client_id: client.and_then(name),
                    ip: None,
                };
                (
                    entity,
                    QuotaValues::from([(QuotaKey::ProducerByteRate, *limit)]),
                )
            })
            .collect();
        KeyQuotas::of(&quotas, QuotaKey::ProducerByteRate)
    }

    fn applied(quotas: &KeyQuotas, user: &str, client: &str) -> Option<(f64, String, String)> {
        let applied = quotas.applied(user, client)?;
        Some((applied.limit, applied.tags.user, applied.tags.client_id))
    }

    #[test]
    fn the_most_specific_level_wins() {
        let all = quotas(&[
            (Some("alice"), Some("app"), 1.0),
            (Some("alice"), Some("*"), 2.0),
            (Some("alice"), None, 3.0),
            (Some("*"), Some("app"), 4.0),
            (Some("*"), Some("*"), 5.0),
            (Some("*"), None, 6.0),
            (None, Some("app"), 7.0),
            (None, Some("*"), 8.0),
        ]);
        let both = |l: f64, u: &str, c: &str| Some((l, u.to_owned(), c.to_owned()));
        assert_eq!(applied(&all, "alice", "app"), both(1.0, "alice", "app"));
        assert_eq!(applied(&all, "alice", "other"), both(2.0, "alice", "other"));
        assert_eq!(applied(&all, "bob", "app"), both(4.0, "bob", "app"));
        assert_eq!(applied(&all, "bob", "other"), both(5.0, "bob", "other"));
    }

    #[test]
    fn a_user_quota_is_shared_by_the_users_clients() {
        let users = quotas(&[(Some("alice"), None, 3.0), (Some("*"), None, 6.0)]);
        let user = |l: f64, u: &str| Some((l, u.to_owned(), String::new()));
        assert_eq!(applied(&users, "alice", "a"), user(3.0, "alice"));
        assert_eq!(applied(&users, "alice", "b"), user(3.0, "alice"));
        assert_eq!(applied(&users, "bob", "a"), user(6.0, "bob"));
        // A client quota alone: tagged by client id, whoever the user.
        let clients = quotas(&[(None, Some("app"), 7.0)]);
        assert_eq!(
            applied(&clients, "alice", "app"),
            Some((7.0, String::new(), "app".to_owned()))
        );
        assert_eq!(applied(&clients, "alice", "other"), None);
    }

    #[test]
    fn mixed_levels_fall_through_to_the_client_quota() {
        let mixed = quotas(&[(Some("alice"), None, 3.0), (None, Some("*"), 8.0)]);
        assert_eq!(
            applied(&mixed, "alice", "x"),
            Some((3.0, "alice".to_owned(), String::new()))
        );
        assert_eq!(
            applied(&mixed, "bob", "x"),
            Some((8.0, String::new(), "x".to_owned()))
        );
    }
}
