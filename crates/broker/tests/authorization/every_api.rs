//! Every API refused without the ACL Kafka checks for it, and served with it.

use super::*;

#[tokio::test]
async fn every_api_is_refused_without_its_acl_and_served_with_it() {
    let Scene {
        _dir,
        broker,
        admin: _,
        mut client,
    } = Scene::new(&[TOPIC]).await;

    // No ACL for the client's host: each API is refused with Kafka's code, the topic's
    // existence is not revealed, and what lists things leaves them out.
    let mut probed = BTreeSet::new();
    for (api, _, _) in SUPPORTED {
        let Some(codes) = probe(&mut client, *api).await else {
            continue;
        };
        probed.insert(format!("{api:?}"));
        assert!(
            codes.contains(&probes::refusal(*api)),
            "{api:?} without an ACL answered {codes:?}"
        );
    }
    for (api, _, _) in SUPPORTED {
        assert!(
            probed.contains(&format!("{api:?}")) || probes::NOT_PROBED.contains(api),
            "{api:?} is served but has no authorization probe"
        );
    }
    let all_topics: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    assert!(all_topics.topics.is_empty(), "{:?}", all_topics.topics);
    let described: DescribeClusterResponse = client
        .send(
            ApiKey::DescribeCluster,
            1,
            &DescribeClusterRequest::default().with_include_cluster_authorized_operations(true),
        )
        .await;
    assert_eq!(
        (
            described.error_code,
            described.cluster_authorized_operations
        ),
        (0, 0)
    );

    // An idempotent producer may also start with WRITE on any one topic instead of
    // IDEMPOTENT_WRITE on the cluster.
    let acls = broker.context.access.acls().unwrap();
    acls.create(&[acl(
        ResourceType::Topic,
        "elsewhere",
        CLIENT_HOST,
        AclOperation::Write,
    )])
    .unwrap();
    assert_eq!(
        probe(&mut client, ApiKey::InitProducerId).await.unwrap(),
        [0]
    );

    // With the ACLs Kafka checks, nothing is refused for authorization.
    acls.create(&[
        acl(ResourceType::Topic, TOPIC, CLIENT_HOST, AclOperation::All),
        acl(
            ResourceType::Topic,
            "orders-",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::Topic,
            "orders-new",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::Topic,
            "orders-gone",
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(ResourceType::Group, GROUP, CLIENT_HOST, AclOperation::All),
        acl(
            ResourceType::Group,
            &probes::share_group_of(GROUP),
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::TransactionalId,
            GROUP,
            CLIENT_HOST,
            AclOperation::All,
        ),
        acl(
            ResourceType::Cluster,
            "kafka-cluster",
            CLIENT_HOST,
            AclOperation::All,
        ),
    ])
    .unwrap();
    for (api, _, _) in SUPPORTED {
        let Some(codes) = probe(&mut client, *api).await else {
            continue;
        };
        assert!(
            !codes.iter().any(|code| AUTHORIZATION_CODES.contains(code)),
            "{api:?} with its ACL answered {codes:?}"
        );
    }
    let listed: ListGroupsResponse = client
        .send(ApiKey::ListGroups, 4, &ListGroupsRequest::default())
        .await;
    assert_eq!(listed.error_code, 0);
    let all_topics: MetadataResponse = client
        .send(
            ApiKey::Metadata,
            12,
            &MetadataRequest::default().with_topics(None),
        )
        .await;
    let names: Vec<&str> = all_topics
        .topics
        .iter()
        .filter_map(|topic| topic.name.as_ref().map(|name| name.0.as_str()))
        .collect();
    assert!(names.contains(&TOPIC), "{names:?}");
}
