//! Each API needs exactly what the API table declares: each ACL necessary, all of them enough.

use super::*;

/// The client's ACLs become exactly `granted`: topics by the prefix [`TOPIC`] (every topic a
/// probe names starts with it), the group [`GROUP`], the cluster.
pub(super) fn grant_client(broker: &Broker, granted: &[(ResourceType, AclOperation)]) {
    let acls = broker.context.access.acls().unwrap();
    acls.delete(&[ferrolog_broker::authz::AclFilter {
        pattern: ferrolog_broker::authz::PatternFilter {
            resource_type: None,
            name: None,
            pattern_type: ferrolog_broker::authz::PatternTypeFilter::Any,
        },
        entry: ferrolog_broker::authz::EntryFilter {
            host: Some(CLIENT_HOST.to_owned()),
            ..Default::default()
        },
    }])
    .unwrap();
    let bindings: Vec<AclBinding> = granted
        .iter()
        .map(|(resource_type, operation)| {
            let (name, pattern_type) = match resource_type {
                ResourceType::Topic => (TOPIC, PatternType::Prefixed),
                // The probes name the group's id as their transactional id too.
                // Prefixed: the probes of the share groups' offset APIs name a group under it.
                ResourceType::Group => (GROUP, PatternType::Prefixed),
                ResourceType::TransactionalId => (GROUP, PatternType::Literal),
                _ => ("kafka-cluster", PatternType::Literal),
            };
            let mut binding = acl(*resource_type, name, CLIENT_HOST, *operation);
            binding.pattern.pattern_type = pattern_type;
            binding
        })
        .collect();
    acls.create(&bindings).unwrap();
}

/// The operations on `resource_type` (ALL aside) that do not allow `needed`: granting any of
/// them instead must not do. ALTER on the cluster is left out for CLUSTER_ACTION: Kafka takes
/// either for WriteTxnMarkers (tested with the handler).
fn not_enough(resource_type: ResourceType, needed: AclOperation) -> Vec<AclOperation> {
    resource_type
        .supported_operations()
        .iter()
        .copied()
        .filter(|operation| !allow_covers(*operation, needed))
        .filter(|operation| {
            !(resource_type == ResourceType::Cluster
                && needed == AclOperation::ClusterAction
                && *operation == AclOperation::Alter)
        })
        .collect()
}

/// The refusal of a resource type: what Kafka answers when an operation on it is denied.
fn refusal_of(resource_type: ResourceType) -> i16 {
    match resource_type {
        ResourceType::Topic => TOPIC_AUTHORIZATION_FAILED,
        ResourceType::Group => GROUP_AUTHORIZATION_FAILED,
        ResourceType::TransactionalId => TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        _ => CLUSTER_AUTHORIZATION_FAILED,
    }
}

fn refused(codes: &[i16]) -> bool {
    codes.iter().any(|code| AUTHORIZATION_CODES.contains(code))
}

#[tokio::test]
async fn each_api_needs_exactly_what_the_api_table_declares() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    for topic in [TOPIC.to_owned(), probes::doomed_topic(TOPIC)] {
        assert_eq!(admin.create_topic(&topic, 1, &[]).await.error_code, 0);
    }
    remember_topic_id(&broker);
    let mut client = connect_from(&broker, CLIENT_HOST).await;
    for (api, _, _) in SUPPORTED {
        // The group exists, with an offset, before each API (DeleteGroups deletes it): a
        // request about a missing group may be answered GROUP_ID_NOT_FOUND before its topics
        // are looked at, as Kafka answers OffsetDelete.
        let commit = OffsetCommitRequest::default()
            .with_group_id(GroupId(text(GROUP)))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![
                kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(TopicName(text(TOPIC)))
                    .with_partitions(vec![
                        kafka_protocol::messages::offset_commit_request::OffsetCommitRequestPartition::default(),
                    ]),
            ]);
        let committed: OffsetCommitResponse = admin.send(ApiKey::OffsetCommit, 8, &commit).await;
        assert_eq!(committed.topics[0].partitions[0].error_code, 0);
        let needs = dispatch::required_acls(*api);
        if probes::probe(*api, TOPIC, GROUP, uuid::Uuid::nil()).is_none() {
            assert!(needs.is_empty(), "{api:?} needs {needs:?} but has no probe");
            continue;
        }
        assert!(!needs.is_empty(), "{api:?} has a probe but needs nothing");
        // Each operation it needs is necessary: withheld, or replaced by any operation on the
        // same resources that does not allow it, the request is refused with the refusal of
        // that resource's type (so a handler checking another operation, or checking its
        // resources in another order, is caught).
        for (index, (resource_type, operation)) in needs.iter().enumerate() {
            let withheld: Vec<_> = needs
                .iter()
                .enumerate()
                .filter(|(at, _)| *at != index)
                .map(|(_, need)| *need)
                .collect();
            let mut grants = vec![withheld.clone()];
            for instead in not_enough(*resource_type, *operation) {
                let mut replaced = withheld.clone();
                replaced.push((*resource_type, instead));
                grants.push(replaced);
            }
            for granted in grants {
                grant_client(&broker, &granted);
                let codes = probe(&mut client, *api).await.unwrap();
                assert!(
                    codes.contains(&refusal_of(*resource_type)),
                    "{api:?} needing {resource_type} {operation}, with {granted:?}, answered {codes:?}"
                );
            }
        }
        // And all of them together are enough.
        grant_client(&broker, needs);
        let codes = probe(&mut client, *api).await.unwrap();
        assert!(
            !refused(&codes),
            "{api:?} with {needs:?} answered {codes:?}"
        );
    }
}
