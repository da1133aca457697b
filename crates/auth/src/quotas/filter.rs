//! DescribeClientQuotas' filter, matched as Kafka matches it (`ClientQuotasImage#matches`): a
//! component asks for a type with a given name (exact), the type's default entity, or the type
//! with any name, default included (specified); a strict filter also wants the entity to have
//! no other type. An empty non-strict filter matches every entity.

use super::entity::{EntityName, QuotaEntity};

/// What one component asks of its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// This name (`MATCH_TYPE_EXACT`, 0).
    Exact(String),
    /// The default entity (`MATCH_TYPE_DEFAULT`, 1).
    Default,
    /// Any entity of the type, the default included (`MATCH_TYPE_SPECIFIED`, 2).
    Specified,
}

/// A DescribeClientQuotas filter, already checked (see the broker's handler).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub components: Vec<(String, Match)>,
    pub strict: bool,
}

impl Filter {
    /// Whether `entity` is one the filter asks for.
    pub fn matches(&self, entity: &QuotaEntity) -> bool {
        if self.strict && entity.parts().len() != self.components.len() {
            return false;
        }
        self.components.iter().all(|(kind, wanted)| {
            let Some(name) = entity.part(kind) else {
                return false;
            };
            match (wanted, name) {
                (Match::Specified, _) | (Match::Default, EntityName::Default) => true,
                (Match::Exact(wanted), EntityName::Named(name)) => wanted == name,
                _ => false,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entity(user: Option<EntityName>, client_id: Option<EntityName>) -> QuotaEntity {
        QuotaEntity {
            user,
            client_id,
            ip: None,
        }
    }

    #[test]
    fn components_match_as_in_kafka() {
        let alice = Some(EntityName::Named("alice".into()));
        let default = Some(EntityName::Default);
        let user_alice = entity(alice.clone(), None);
        let user_default = entity(default.clone(), None);
        let alice_any_client = entity(alice.clone(), default.clone());
        let filter = |components: Vec<(&str, Match)>, strict| Filter {
            components: components
                .into_iter()
                .map(|(kind, wanted)| (kind.to_owned(), wanted))
                .collect(),
            strict,
        };
        let exact = filter(vec![("user", Match::Exact("alice".into()))], true);
        assert!(exact.matches(&user_alice));
        assert!(!exact.matches(&user_default));
        assert!(!exact.matches(&alice_any_client), "strict: no other type");
        let loose = filter(vec![("user", Match::Exact("alice".into()))], false);
        assert!(loose.matches(&alice_any_client));
        let defaults = filter(vec![("user", Match::Default)], true);
        assert!(defaults.matches(&user_default) && !defaults.matches(&user_alice));
        let specified = filter(vec![("user", Match::Specified)], true);
        assert!(specified.matches(&user_default) && specified.matches(&user_alice));
        assert!(!specified.matches(&entity(None, default)));
        assert!(filter(Vec::new(), false).matches(&alice_any_client));
        assert!(!filter(Vec::new(), true).matches(&alice_any_client));
    }
}
