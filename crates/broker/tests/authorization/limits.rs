//! ACLs are limited in all and per request.

use super::*;

pub(super) async fn start_limited(dir: &std::path::Path, max_acls: usize) -> Broker {
    Broker::start_with(
        ManagerConfig {
            log_dirs: vec![dir.to_path_buf()],
            ..ManagerConfig::default()
        },
        BrokerConfig {
            authorizer: Some(AuthorizerConfig::default()),
            max_acls,
            ..BrokerConfig::default()
        },
    )
    .await
}

fn match_any_filter() -> DeleteAclsFilter {
    DeleteAclsFilter::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1)
}

#[tokio::test]
async fn acls_are_limited_in_all_and_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_limited(dir.path(), 5).await;
    grant_admin(&broker);
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    // Three held, a limit of five: three more are refused, all of them.
    let request = CreateAclsRequest::default().with_creations(
        ["x", "y", "z"]
            .iter()
            .map(|name| probes::creation(2, name, 3, "*", 3, 3))
            .collect(),
    );
    let created: CreateAclsResponse = admin.send(ApiKey::CreateAcls, 3, &request).await;
    for result in &created.results {
        assert_eq!(result.error_code, POLICY_VIOLATION, "{created:?}");
        assert!(
            result
                .error_message
                .as_deref()
                .unwrap()
                .contains("ferrolog.max.acls"),
            "{created:?}"
        );
    }
    assert_eq!(broker.context.access.acls().unwrap().snapshot().len(), 3);
    drop((admin, broker));

    // One DeleteAcls request removes 10,000 at most: a filter past it removes nothing.
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    grant_admin(&broker);
    let many: Vec<AclBinding> = (0..10_000)
        .map(|n| {
            acl(
                ResourceType::Topic,
                &format!("t{n}"),
                CLIENT_HOST,
                AclOperation::Read,
            )
        })
        .collect();
    broker.context.access.acls().unwrap().create(&many).unwrap();
    let mut admin = connect_from(&broker, ADMIN_HOST).await;
    let one_topic = DeleteAclsFilter::default()
        .with_resource_type_filter(2)
        .with_resource_name_filter(Some(text("t7")))
        .with_pattern_type_filter(3)
        .with_principal_filter(None)
        .with_host_filter(None)
        .with_operation(1)
        .with_permission_type(1);
    let deleted: DeleteAclsResponse = admin
        .send(
            ApiKey::DeleteAcls,
            3,
            &DeleteAclsRequest::default().with_filters(vec![one_topic, match_any_filter()]),
        )
        .await;
    assert_eq!(deleted.filter_results[0].error_code, 0);
    assert_eq!(deleted.filter_results[0].matching_acls.len(), 1);
    assert_eq!(deleted.filter_results[1].error_code, INVALID_REQUEST);
    assert!(deleted.filter_results[1].matching_acls.is_empty());
    assert_eq!(
        broker.context.access.acls().unwrap().snapshot().len(),
        10_000 + 3 - 1
    );
}
