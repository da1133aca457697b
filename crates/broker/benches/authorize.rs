//! The cost of one authorization decision as the number of ACLs grows: through the index the
//! broker uses (`authz::index`), and, for comparison, by scanning every ACL, as a decision
//! did before the index. `cargo bench -p ferrolog-broker --bench authorize`.
//!
//! The ACLs: one literal READ per topic `topic-<n>` for one of 100 principals, and one
//! prefixed WRITE per 100 topics (`team-<n>-`); the decision is READ on an existing topic by
//! its principal (allowed) from a client whose host every ACL names with `*`.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use ferrolog_broker::authz::{
    AccessEntry, AclBinding, AclIndex, AclOperation, AuthorizerConfig, Decision, PatternType,
    Permission, Requester, ResourcePattern, ResourceType, authorize,
};

fn acls(count: usize) -> Vec<AclBinding> {
    (0..count)
        .map(|n| {
            let (name, pattern_type, operation) = if n % 100 == 99 {
                (
                    format!("team-{n}-"),
                    PatternType::Prefixed,
                    AclOperation::Write,
                )
            } else {
                (
                    format!("topic-{n}"),
                    PatternType::Literal,
                    AclOperation::Read,
                )
            };
            AclBinding {
                pattern: ResourcePattern {
                    resource_type: ResourceType::Topic,
                    name,
                    pattern_type,
                },
                entry: AccessEntry {
                    principal: format!("User:app-{}", n % 100),
                    host: "*".to_owned(),
                    operation,
                    permission: Permission::Allow,
                },
            }
        })
        .collect()
}

/// The decision as it was made before the index: every ACL looked at.
fn scan(acls: &[AclBinding], who: Requester<'_>, operation: AclOperation, name: &str) -> Decision {
    let mut allowed = false;
    for binding in acls {
        if binding.pattern.resource_type != ResourceType::Topic || !binding.pattern.matches(name) {
            continue;
        }
        let counts = (binding.entry.principal == who.principal
            || binding.entry.principal == "User:*")
            && (binding.entry.host == "*" || binding.entry.host == who.host);
        if !counts {
            continue;
        }
        if binding.entry.permission == Permission::Deny
            && (binding.entry.operation == operation
                || binding.entry.operation == AclOperation::All)
        {
            return Decision::Denied;
        }
        if binding.entry.permission == Permission::Allow
            && (binding.entry.operation == operation
                || binding.entry.operation == AclOperation::All)
        {
            allowed = true;
        }
    }
    if allowed {
        Decision::Allowed
    } else {
        Decision::Denied
    }
}

fn decisions(c: &mut Criterion) {
    let config = AuthorizerConfig::default();
    let who = Requester {
        principal: "User:app-34",
        host: "10.0.0.7",
    };
    let mut group = c.benchmark_group("authorize");
    for count in [100, 10_000, 100_000] {
        let list = acls(count);
        let index = AclIndex::new(list.clone());
        let topic = "topic-34";
        assert_eq!(
            authorize(
                &index,
                &config,
                who,
                AclOperation::Read,
                ResourceType::Topic,
                topic
            ),
            Decision::Allowed
        );
        assert_eq!(
            scan(&list, who, AclOperation::Read, topic),
            Decision::Allowed
        );
        group.bench_with_input(BenchmarkId::new("indexed", count), &index, |b, index| {
            b.iter(|| {
                authorize(
                    black_box(index),
                    &config,
                    who,
                    AclOperation::Read,
                    ResourceType::Topic,
                    black_box(topic),
                )
            })
        });
        group.bench_with_input(BenchmarkId::new("scan", count), &list, |b, list| {
            b.iter(|| scan(black_box(list), who, AclOperation::Read, black_box(topic)))
        });
    }
    group.finish();
}

criterion_group!(benches, decisions);
criterion_main!(benches);
