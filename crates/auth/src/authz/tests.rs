//! The decision rules, case by case, as Kafka's `StandardAuthorizer` decides them.

use super::*;
use AclOperation::*;
use Decision::{Allowed, Denied};
use ResourceType::{Cluster, Group, Topic};

const ALICE: Requester<'static> = Requester {
    principal: "User:alice",
    host: "10.0.0.1",
};
const BOB: Requester<'static> = Requester {
    principal: "User:bob",
    host: "10.0.0.2",
};

fn acl(
    resource_type: ResourceType,
    name: &str,
    pattern_type: PatternType,
    principal: &str,
    host: &str,
    operation: AclOperation,
    permission: Permission,
) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type,
            name: name.to_owned(),
            pattern_type,
        },
        entry: AccessEntry {
            principal: principal.to_owned(),
            host: host.to_owned(),
            operation,
            permission,
        },
    }
}

/// A literal ACL from any host.
fn literal(
    permission: Permission,
    resource_type: ResourceType,
    name: &str,
    principal: &str,
    operation: AclOperation,
) -> AclBinding {
    acl(
        resource_type,
        name,
        PatternType::Literal,
        principal,
        WILDCARD,
        operation,
        permission,
    )
}

/// A prefixed ACL from any host.
fn prefixed(
    permission: Permission,
    resource_type: ResourceType,
    prefix: &str,
    principal: &str,
    operation: AclOperation,
) -> AclBinding {
    acl(
        resource_type,
        prefix,
        PatternType::Prefixed,
        principal,
        WILDCARD,
        operation,
        permission,
    )
}

fn allow(kind: ResourceType, name: &str, principal: &str, operation: AclOperation) -> AclBinding {
    literal(Permission::Allow, kind, name, principal, operation)
}

fn deny(kind: ResourceType, name: &str, principal: &str, operation: AclOperation) -> AclBinding {
    literal(Permission::Deny, kind, name, principal, operation)
}

fn decide(
    acls: &[AclBinding],
    who: Requester<'_>,
    operation: AclOperation,
    resource_type: ResourceType,
    name: &str,
) -> Decision {
    authorize(
        &AclIndex::new(acls.to_vec()),
        &AuthorizerConfig::default(),
        who,
        operation,
        resource_type,
        name,
    )
}

#[test]
fn without_any_acl_everything_is_denied_unless_allow_everyone_is_set() {
    assert_eq!(decide(&[], ALICE, Read, Topic, "orders"), Denied);
    let open = AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..AuthorizerConfig::default()
    };
    assert_eq!(
        authorize(
            &AclIndex::new(Vec::new()),
            &open,
            ALICE,
            Read,
            Topic,
            "orders"
        ),
        Allowed
    );
}

#[test]
fn allow_everyone_applies_only_where_no_acl_of_anyone_applies() {
    let open = AuthorizerConfig {
        allow_everyone_if_no_acl_found: true,
        ..AuthorizerConfig::default()
    };
    // An ACL for bob on the topic: alice, with no ACL of her own there, is denied.
    let acls = [allow(Topic, "orders", BOB.principal, Write)];
    assert_eq!(
        authorize(
            &AclIndex::new(acls.to_vec()),
            &open,
            ALICE,
            Read,
            Topic,
            "orders"
        ),
        Denied
    );
    // Another topic has no ACL: open.
    assert_eq!(
        authorize(
            &AclIndex::new(acls.to_vec()),
            &open,
            ALICE,
            Read,
            Topic,
            "payments"
        ),
        Allowed
    );
    // A prefixed ACL covers every name under it, so those are no longer open.
    let prefixed = [prefixed(
        Permission::Allow,
        Topic,
        "pay",
        BOB.principal,
        Read,
    )];
    assert_eq!(
        authorize(
            &AclIndex::new(prefixed.to_vec()),
            &open,
            ALICE,
            Read,
            Topic,
            "payments"
        ),
        Denied
    );
    // A group ACL says nothing about topics.
    let group = [allow(Group, "orders", BOB.principal, Read)];
    assert_eq!(
        authorize(
            &AclIndex::new(group.to_vec()),
            &open,
            ALICE,
            Read,
            Topic,
            "orders"
        ),
        Allowed
    );
}

#[test]
fn super_users_may_do_everything_even_against_a_deny() {
    let config = AuthorizerConfig::parse(Some("User:admin; User:ops"), None).unwrap();
    let admin = Requester {
        principal: "User:admin",
        host: "10.0.0.9",
    };
    let acls = [deny(Topic, WILDCARD, ANY_USER, All)];
    assert_eq!(
        authorize(
            &AclIndex::new(acls.to_vec()),
            &config,
            admin,
            Delete,
            Topic,
            "orders"
        ),
        Allowed
    );
    assert_eq!(
        authorize(
            &AclIndex::new(acls.to_vec()),
            &config,
            ALICE,
            Read,
            Topic,
            "orders"
        ),
        Denied
    );
    assert!(
        AuthorizerConfig::parse(Some("admin"), None)
            .unwrap_err()
            .contains("super.users")
    );
    assert!(
        AuthorizerConfig::parse(None, Some("yes"))
            .unwrap_err()
            .contains("allow.everyone.if.no.acl.found")
    );
}

#[test]
fn deny_wins_over_allow_from_any_matching_pattern() {
    let acls = [
        allow(Topic, "orders", ALICE.principal, Read),
        prefixed(Permission::Deny, Topic, "ord", ALICE.principal, Read),
    ];
    assert_eq!(decide(&acls, ALICE, Read, Topic, "orders"), Denied);
    let acls = [
        allow(Topic, "orders", ALICE.principal, All),
        deny(Topic, WILDCARD, ANY_USER, Write),
    ];
    assert_eq!(decide(&acls, ALICE, Write, Topic, "orders"), Denied);
    assert_eq!(decide(&acls, ALICE, Read, Topic, "orders"), Allowed);
}

#[test]
fn patterns_match_literal_names_prefixes_and_the_wildcard() {
    let acls = [
        allow(Topic, "orders", ALICE.principal, Read),
        prefixed(Permission::Allow, Topic, "logs-", ALICE.principal, Read),
        allow(Group, WILDCARD, ALICE.principal, Read),
    ];
    assert_eq!(decide(&acls, ALICE, Read, Topic, "orders"), Allowed);
    assert_eq!(
        decide(&acls, ALICE, Read, Topic, "orders2"),
        Denied,
        "literal is exact"
    );
    assert_eq!(
        decide(&acls, ALICE, Read, Topic, "ORDERS"),
        Denied,
        "names are case-sensitive"
    );
    assert_eq!(decide(&acls, ALICE, Read, Topic, "logs-app"), Allowed);
    assert_eq!(
        decide(&acls, ALICE, Read, Topic, "logs-"),
        Allowed,
        "a prefix covers itself"
    );
    assert_eq!(decide(&acls, ALICE, Read, Topic, "logs"), Denied);
    assert_eq!(decide(&acls, ALICE, Read, Group, "any-group"), Allowed);
    // A prefixed `*` is no wildcard: it covers names starting with `*`.
    let star = [prefixed(
        Permission::Allow,
        Topic,
        WILDCARD,
        ALICE.principal,
        Read,
    )];
    assert_eq!(decide(&star, ALICE, Read, Topic, "orders"), Denied);
    assert_eq!(decide(&star, ALICE, Read, Topic, "*orders"), Allowed);
}

#[test]
fn principals_match_exactly_or_by_the_user_wildcard_and_hosts_by_address_or_wildcard() {
    let acls = [acl(
        Topic,
        "orders",
        PatternType::Literal,
        ANY_USER,
        "10.0.0.1",
        Read,
        Permission::Allow,
    )];
    assert_eq!(decide(&acls, ALICE, Read, Topic, "orders"), Allowed);
    assert_eq!(
        decide(&acls, BOB, Read, Topic, "orders"),
        Denied,
        "another host"
    );
    let service = Requester {
        principal: "Service:x",
        host: "10.0.0.1",
    };
    assert_eq!(
        decide(&acls, service, Read, Topic, "orders"),
        Allowed,
        "User:* matches every type"
    );
    let acls = [allow(Topic, "orders", "Group:*", Read)];
    assert_eq!(
        decide(&acls, ALICE, Read, Topic, "orders"),
        Denied,
        "only User:* is a wildcard"
    );
}

#[test]
fn an_allow_implies_describe_and_describe_configs_but_a_deny_implies_nothing() {
    for granted in [Read, Write, Delete, Alter] {
        let acls = [allow(Topic, "orders", ALICE.principal, granted)];
        assert_eq!(
            decide(&acls, ALICE, Describe, Topic, "orders"),
            Allowed,
            "{granted}"
        );
    }
    for granted in [Create, AlterConfigs, DescribeConfigs] {
        let acls = [allow(Topic, "orders", ALICE.principal, granted)];
        assert_eq!(
            decide(&acls, ALICE, Describe, Topic, "orders"),
            Denied,
            "{granted}"
        );
    }
    let acls = [allow(Topic, "orders", ALICE.principal, AlterConfigs)];
    assert_eq!(
        decide(&acls, ALICE, DescribeConfigs, Topic, "orders"),
        Allowed
    );
    assert_eq!(decide(&acls, ALICE, Alter, Topic, "orders"), Denied);
    let acls = [
        allow(Topic, "orders", ALICE.principal, Describe),
        deny(Topic, "orders", ALICE.principal, Read),
    ];
    assert_eq!(
        decide(&acls, ALICE, Describe, Topic, "orders"),
        Allowed,
        "a DENY of READ keeps DESCRIBE"
    );
}

#[test]
fn authorized_operations_is_the_bitfield_of_allowed_operations() {
    let config = AuthorizerConfig::default();
    let acls = [allow(Topic, "orders", ALICE.principal, Read)];
    let bits = authorized_operations(
        &AclIndex::new(acls.to_vec()),
        &config,
        ALICE,
        Topic,
        "orders",
    );
    assert_eq!(bits, (1 << Read.code()) | (1 << Describe.code()));
    let admin = AuthorizerConfig::parse(Some("User:alice"), None).unwrap();
    // Kafka's figures for everything allowed.
    assert_eq!(
        authorized_operations(&AclIndex::new(Vec::new()), &admin, ALICE, Topic, "orders"),
        3576
    );
    assert_eq!(
        authorized_operations(&AclIndex::new(Vec::new()), &admin, ALICE, Group, "g"),
        3400
    );
    assert_eq!(
        authorized_operations(
            &AclIndex::new(Vec::new()),
            &admin,
            ALICE,
            Cluster,
            CLUSTER_NAME
        ),
        8096
    );
}

#[test]
fn by_resource_type_write_on_some_topic_is_enough_unless_denied() {
    let config = AuthorizerConfig::default();
    let decide_type = |acls: &[AclBinding]| {
        authorize_by_resource_type(&AclIndex::new(acls.to_vec()), &config, ALICE, Write, Topic)
    };
    assert_eq!(decide_type(&[]), Denied);
    assert_eq!(
        decide_type(&[allow(Topic, "orders", ALICE.principal, Write)]),
        Allowed
    );
    assert_eq!(
        decide_type(&[allow(Topic, "orders", ALICE.principal, All)]),
        Allowed
    );
    assert_eq!(
        decide_type(&[allow(Topic, "orders", ALICE.principal, Read)]),
        Denied,
        "no implied operations here"
    );
    assert_eq!(
        decide_type(&[
            allow(Topic, "orders", ALICE.principal, Write),
            deny(Topic, "orders", ALICE.principal, Write)
        ]),
        Denied
    );
    assert_eq!(
        decide_type(&[
            allow(Topic, "orders", ALICE.principal, Write),
            prefixed(Permission::Deny, Topic, "ord", ALICE.principal, Write),
        ]),
        Denied
    );
    assert_eq!(
        decide_type(&[
            allow(Topic, "orders", ALICE.principal, Write),
            deny(Topic, WILDCARD, ANY_USER, Write)
        ]),
        Denied
    );
    assert_eq!(
        decide_type(&[allow(Topic, WILDCARD, ANY_USER, Write)]),
        Allowed
    );
    assert_eq!(
        decide_type(&[allow(Topic, "orders", BOB.principal, Write)]),
        Denied,
        "someone else's ACL"
    );
}

#[test]
fn acls_are_checked_as_kafka_checks_them_before_storing() {
    let good = allow(Topic, "orders", ALICE.principal, Read);
    assert_eq!(good.validate(), Ok(()));
    assert!(allow(Topic, "", ALICE.principal, Read).validate().is_err());
    assert!(allow(Topic, "orders", "alice", Read).validate().is_err());
    // Kafka asks only for the colon.
    assert_eq!(allow(Topic, "orders", "User:", Read).validate(), Ok(()));
    // The cluster's name is checked first, as Kafka checks it.
    assert_eq!(
        allow(Cluster, "my-cluster", "nobody", Alter).validate(),
        Err("The only valid name for the CLUSTER resource is kafka-cluster".to_owned())
    );
    assert_eq!(
        allow(Cluster, CLUSTER_NAME, ALICE.principal, Alter).validate(),
        Ok(())
    );
    for resource_type in ResourceType::ALL_VALUES {
        assert_eq!(
            ResourceType::from_code(resource_type.code()),
            Some(*resource_type)
        );
    }
    assert_eq!(
        AclOperation::from_code(1),
        None,
        "ANY is a filter, never an ACL's"
    );
    assert_eq!(Topic.to_string(), "TOPIC");
}

fn pattern_filter(
    resource_type: Option<ResourceType>,
    name: Option<&str>,
    pattern_type: PatternTypeFilter,
) -> AclFilter {
    AclFilter {
        pattern: PatternFilter {
            resource_type,
            name: name.map(str::to_owned),
            pattern_type,
        },
        entry: EntryFilter::default(),
    }
}

#[test]
fn filters_select_patterns_as_kafka_s_describe_and_delete_do() {
    let literal = allow(Topic, "orders", ALICE.principal, Read);
    let wildcard = allow(Topic, WILDCARD, ALICE.principal, Read);
    let ord_prefix = prefixed(Permission::Allow, Topic, "ord", ALICE.principal, Read);
    let other_prefix = prefixed(Permission::Allow, Topic, "pay", ALICE.principal, Read);
    let group = allow(Group, "orders", ALICE.principal, Read);
    let all = [&literal, &wildcard, &ord_prefix, &other_prefix, &group];
    let selected = |filter: &AclFilter| -> Vec<&AclBinding> {
        all.iter()
            .copied()
            .filter(|binding| filter.matches(binding))
            .collect()
    };
    // ANY: every pattern type, the name compared as it is.
    let any = pattern_filter(Some(Topic), Some("orders"), PatternTypeFilter::Any);
    assert_eq!(selected(&any), vec![&literal]);
    // MATCH: what would apply to a topic named `orders`.
    let matching = pattern_filter(Some(Topic), Some("orders"), PatternTypeFilter::Match);
    assert_eq!(selected(&matching), vec![&literal, &wildcard, &ord_prefix]);
    // An exact pattern type.
    let prefixed_only = pattern_filter(
        Some(Topic),
        Some("ord"),
        PatternTypeFilter::Exactly(PatternType::Prefixed),
    );
    assert_eq!(selected(&prefixed_only), vec![&ord_prefix]);
    // No name, no type: everything of the pattern type asked for.
    let everything = pattern_filter(None, None, PatternTypeFilter::Any);
    assert_eq!(selected(&everything).len(), 5);
    let all_prefixed = pattern_filter(
        None,
        None,
        PatternTypeFilter::Exactly(PatternType::Prefixed),
    );
    assert_eq!(selected(&all_prefixed), vec![&ord_prefix, &other_prefix]);
    // Entry fields match exactly: a filter for bob does not select User:* or alice.
    let mut for_bob = everything.clone();
    for_bob.entry.principal = Some(BOB.principal.to_owned());
    assert!(selected(&for_bob).is_empty());
    let mut writes = everything;
    writes.entry.operation = Some(Write);
    assert!(selected(&writes).is_empty(), "READ ACLs are not WRITE ones");
    assert_eq!(
        PatternTypeFilter::from_code(2),
        Some(PatternTypeFilter::Match)
    );
    assert_eq!(PatternTypeFilter::from_code(0), None);
}

#[test]
fn the_index_finds_exactly_the_acls_whose_pattern_matches() {
    // Names over a small alphabet, so that literals, prefixes (the whole name included), the
    // wildcard and multi-byte characters meet often.
    let alphabet = ["a", "b", "é", "*"];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |bound: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as usize
    };
    let name = |next: &mut dyn FnMut(usize) -> usize| {
        (0..1 + next(3))
            .map(|_| alphabet[next(alphabet.len())])
            .collect::<String>()
    };
    for _ in 0..50 {
        let acls: Vec<AclBinding> = (0..next(30))
            .map(|_| {
                let pattern_type = [PatternType::Literal, PatternType::Prefixed][next(2)];
                let resource_type = [Topic, Group][next(2)];
                let name = if next(5) == 0 {
                    WILDCARD.to_owned()
                } else {
                    name(&mut next)
                };
                acl(
                    resource_type,
                    &name,
                    pattern_type,
                    ALICE.principal,
                    WILDCARD,
                    Read,
                    Permission::Allow,
                )
            })
            .collect();
        let index = AclIndex::new(acls.clone());
        for _ in 0..20 {
            let (resource_type, asked) = ([Topic, Group][next(2)], name(&mut next));
            let mut found: Vec<&AclBinding> = index.applicable(resource_type, &asked).collect();
            let mut expected: Vec<&AclBinding> = acls
                .iter()
                .filter(|binding| {
                    binding.pattern.resource_type == resource_type
                        && binding.pattern.matches(&asked)
                })
                .collect();
            // As multisets: an ACL found twice would be a fault.
            found.sort();
            expected.sort();
            assert_eq!(found, expected, "{resource_type} {asked:?} among {acls:?}");
        }
    }
}
