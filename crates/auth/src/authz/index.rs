//! The ACLs in force, indexed the way a decision looks them up: by resource type and literal
//! name, with the literal wildcard and the prefixes of a name found without scanning the rest.
//! A check then costs a few hash lookups per distinct prefix length, however many ACLs there
//! are (Kafka's `StandardAuthorizerData` keeps a sorted set for the same reason).

use std::collections::{BTreeSet, HashMap};

use super::acl::{AclBinding, PatternType, ResourceType, WILDCARD};

/// An immutable set of ACLs, in the order they were stored.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AclIndex {
    all: Vec<AclBinding>,
    /// Positions in `all` by type and pattern type, then name.
    by_pattern: HashMap<(ResourceType, PatternType), HashMap<String, Vec<usize>>>,
    /// The lengths of the PREFIXED names of each type, so a name's prefixes are looked up only
    /// at lengths some ACL has.
    prefix_lengths: HashMap<ResourceType, BTreeSet<usize>>,
}

impl AclIndex {
    /// Indexes `acls`.
    pub fn new(acls: Vec<AclBinding>) -> Self {
        let mut by_pattern: HashMap<_, HashMap<String, Vec<usize>>> = HashMap::new();
        let mut prefix_lengths: HashMap<_, BTreeSet<usize>> = HashMap::new();
        for (position, binding) in acls.iter().enumerate() {
            let pattern = &binding.pattern;
            by_pattern
                .entry((pattern.resource_type, pattern.pattern_type))
                .or_default()
                .entry(pattern.name.clone())
                .or_default()
                .push(position);
            if pattern.pattern_type == PatternType::Prefixed {
                prefix_lengths
                    .entry(pattern.resource_type)
                    .or_default()
                    .insert(pattern.name.len());
            }
        }
        Self {
            all: acls,
            by_pattern,
            prefix_lengths,
        }
    }

    /// Every ACL, in stored order.
    pub fn all(&self) -> &[AclBinding] {
        &self.all
    }

    /// How many ACLs there are.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// The ACLs that apply to the resource `resource_type`:`name`: of its type, literally
    /// named so or the literal wildcard, or prefixed by a prefix of the name (the whole name
    /// included).
    pub fn applicable<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &'a str,
    ) -> impl Iterator<Item = &'a AclBinding> + 'a {
        let lookup = move |pattern_type, key: &str| {
            self.by_pattern
                .get(&(resource_type, pattern_type))
                .and_then(|names| names.get(key))
                .into_iter()
                .flatten()
        };
        let literal = lookup(PatternType::Literal, name);
        let wildcard = (name != WILDCARD)
            .then(|| lookup(PatternType::Literal, WILDCARD))
            .into_iter()
            .flatten();
        let prefixed = self
            .prefix_lengths
            .get(&resource_type)
            .into_iter()
            .flat_map(move |lengths| lengths.range(..=name.len()))
            .filter_map(move |length| name.get(..*length))
            .flat_map(move |prefix| lookup(PatternType::Prefixed, prefix));
        literal
            .chain(wildcard)
            .chain(prefixed)
            .map(|position| &self.all[*position])
    }

    /// The ACLs of one resource type, in stored order.
    pub fn of_type(&self, resource_type: ResourceType) -> impl Iterator<Item = &AclBinding> {
        self.all
            .iter()
            .filter(move |binding| binding.pattern.resource_type == resource_type)
    }
}
