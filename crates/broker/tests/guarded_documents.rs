//! The documents holding authorization and credentials (`ferrolog-acls`,
//! `ferrolog-scram-credentials`) are written for the broker's user alone, and a deleted or
//! rolled-back one stops the broker instead of opening what it closed, unless
//! `ferrolog.accept.rolled.back.documents` says the older copy is wanted.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

use ferrolog_broker::authz::{
    AccessEntry, AclBinding, AclOperation, AuthorizerConfig, PatternType, Permission,
    ResourcePattern, ResourceType,
};
use ferrolog_broker::sasl::Mechanism;
use ferrolog_broker::sasl::credentials::CredentialChange;
use ferrolog_broker::sasl::scram::ScramCredential;
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{GENERATIONS_FILE, LogManager, ManagerConfig};

fn open(dir: &Path, accept_rollback: bool) -> Result<(Arc<LogManager>, Context), String> {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::new(SystemClock),
        )
        .unwrap(),
    );
    let config = BrokerConfig {
        authorizer: Some(AuthorizerConfig::default()),
        accept_rolled_back_documents: accept_rollback,
        ..BrokerConfig::default()
    };
    match Context::new(Arc::clone(&manager), config) {
        Ok(context) => Ok((manager, context)),
        Err(error) => {
            manager.shutdown().unwrap();
            Err(error.to_string())
        }
    }
}

fn allow_reading(topic: &str) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::Topic,
            name: topic.to_owned(),
            pattern_type: PatternType::Literal,
        },
        entry: AccessEntry {
            principal: "User:alice".to_owned(),
            host: "*".to_owned(),
            operation: AclOperation::Read,
            permission: Permission::Allow,
        },
    }
}

/// Opens the broker's state, adds an ACL for `topic`, and closes it.
fn add_acl(dir: &Path, topic: &str) {
    let (manager, context) = open(dir, false).unwrap();
    context
        .access
        .acls()
        .unwrap()
        .create(&[allow_reading(topic)])
        .unwrap();
    drop(context);
    manager.shutdown().unwrap();
}

fn acl_count(context: &Context) -> usize {
    context.access.acls().unwrap().snapshot().len()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn credentials_and_acls_are_written_for_the_broker_s_user_alone() {
    let temp = tempfile::tempdir().unwrap();
    add_acl(temp.path(), "orders");
    let (manager, context) = open(temp.path(), false).unwrap();
    let credential = ScramCredential {
        salt: vec![1; 16],
        stored_key: vec![2; 32],
        server_key: vec![3; 32],
        iterations: 4096,
    };
    context
        .credentials
        .apply(|_| {
            vec![CredentialChange::Upsert {
                user: "alice".into(),
                mechanism: Mechanism::ScramSha256,
                credential,
            }]
        })
        .unwrap();
    drop(context);
    manager.shutdown().unwrap();
    for file in [
        "ferrolog-acls",
        "ferrolog-scram-credentials",
        GENERATIONS_FILE,
    ] {
        assert_eq!(mode(&temp.path().join(file)), 0o600, "{file}");
    }
}

#[test]
fn a_deleted_or_older_acl_document_stops_the_broker_unless_accepted() {
    let temp = tempfile::tempdir().unwrap();
    let acls = temp.path().join("ferrolog-acls");
    add_acl(temp.path(), "orders");
    let older = std::fs::read(&acls).unwrap();
    add_acl(temp.path(), "payments");

    // An older copy put back (a restored backup).
    std::fs::write(&acls, &older).unwrap();
    let refused = open(temp.path(), false).unwrap_err();
    assert!(
        refused.contains("ferrolog-acls is at generation 1 but generation 2 was written"),
        "{refused}"
    );
    // The file deleted: no ACLs at all would allow everything they closed.
    std::fs::remove_file(&acls).unwrap();
    let refused = open(temp.path(), false).unwrap_err();
    assert!(
        refused.contains("ferrolog-acls is at generation 0"),
        "{refused}"
    );

    // Accepted once: the broker starts without them, and stores that as the newest.
    let (manager, context) = open(temp.path(), true).unwrap();
    assert_eq!(acl_count(&context), 0);
    drop(context);
    manager.shutdown().unwrap();
    let (manager, context) = open(temp.path(), false).unwrap();
    assert_eq!(acl_count(&context), 0, "and later starts need no flag");
    drop(context);
    manager.shutdown().unwrap();
}
