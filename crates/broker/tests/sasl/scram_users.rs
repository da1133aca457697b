//! SCRAM users managed with Kafka's APIs, checked as Kafka checks them, and kept across restarts.

use super::*;

#[tokio::test]
async fn scram_users_are_managed_with_kafkas_apis_and_authenticate() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let mut admin = alice(&broker).await;
    let created = alter(
        &mut admin,
        vec![],
        vec![
            upsertion(Sha::Sha256, "bob", "bob-secret", 4096),
            upsertion(Sha::Sha512, "carol", "carol-secret", 8192),
        ],
    )
    .await;
    assert_eq!(
        created,
        [("bob".to_owned(), 0, None), ("carol".to_owned(), 0, None)]
    );
    let all = describe(&mut admin, None).await;
    assert_eq!(all.error_code, 0);
    let listed: Vec<(String, Vec<(i8, i32)>)> = all
        .results
        .iter()
        .map(|result| {
            (
                result.user.to_string(),
                result
                    .credential_infos
                    .iter()
                    .map(|info| (info.mechanism, info.iterations))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("bob".to_owned(), vec![(1, 4096)]),
            ("carol".to_owned(), vec![(2, 8192)])
        ]
    );

    let (mut bob, outcome) = scram(&broker, Sha::Sha256, "bob", "bob-secret").await;
    assert!(outcome.is_ok(), "{outcome:?}");
    // Bob is not a super user and has no ACLs.
    assert_eq!(
        create_topic_code(&mut bob, "by-bob").await,
        TOPIC_AUTHORIZATION_FAILED
    );
    assert!(
        scram(&broker, Sha::Sha512, "carol", "carol-secret")
            .await
            .1
            .is_ok()
    );

    let generic = |mechanism: &str| {
        format!(
            "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
        )
    };
    for (sha, user, password, mechanism) in [
        (Sha::Sha256, "bob", "bob-secreT", "SCRAM-SHA-256"),
        (Sha::Sha256, "bob", "", "SCRAM-SHA-256"),
        (Sha::Sha512, "bob", "bob-secret", "SCRAM-SHA-512"),
        (Sha::Sha256, "mallory", "bob-secret", "SCRAM-SHA-256"),
        (Sha::Sha256, "alice", "alice-secret", "SCRAM-SHA-256"),
    ] {
        let started = Instant::now();
        let (mut client, outcome) = scram(&broker, sha, user, password).await;
        assert_eq!(
            outcome.err(),
            Some((SASL_AUTHENTICATION_FAILED, generic(mechanism))),
            "{user} {password}"
        );
        assert!(started.elapsed() >= DELAY);
        assert!(closed(&mut client).await);
    }

    // Nothing on disk gives the password back: neither it nor the salted password is stored.
    let stored = std::fs::read_to_string(temp.path().join("ferrolog-scram-credentials")).unwrap();
    assert!(stored.contains("bob SCRAM-SHA-256 4096 "), "{stored}");
    use base64::Engine as _;
    let salted = Sha::Sha256.salted_password("bob-secret", b"salt-of-bob", 4096);
    let salted = base64::engine::general_purpose::STANDARD.encode(salted);
    assert!(
        !stored.contains("bob-secret") && !stored.contains(&salted),
        "{stored}"
    );

    let deleted = alter(
        &mut admin,
        vec![
            ScramCredentialDeletion::default()
                .with_name(text("bob"))
                .with_mechanism(1),
        ],
        vec![],
    )
    .await;
    assert_eq!(deleted, [("bob".to_owned(), 0, None)]);
    assert!(
        scram(&broker, Sha::Sha256, "bob", "bob-secret")
            .await
            .1
            .is_err()
    );
}

#[tokio::test]
async fn credential_changes_are_checked_as_kafka_checks_them() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let mut admin = alice(&broker).await;
    let long_name = "n".repeat(1025);
    let refused =
        |user: &str, code: i16, message: &str| (user.to_owned(), code, Some(message.to_owned()));
    let results = alter(
        &mut admin,
        vec![
            ScramCredentialDeletion::default()
                .with_name(text("ghost"))
                .with_mechanism(1),
            ScramCredentialDeletion::default()
                .with_name(text(""))
                .with_mechanism(1),
        ],
        vec![
            upsertion(Sha::Sha256, "few", "x", 4095),
            upsertion(Sha::Sha256, "many", "x", 16385),
            upsertion(Sha::Sha256, "twice", "x", 4096),
            upsertion(Sha::Sha512, "twice", "x", 4096),
            upsertion(Sha::Sha256, "odd", "x", 4096).with_mechanism(3),
            upsertion(Sha::Sha256, "fine", "x", 16384),
            upsertion(Sha::Sha256, &long_name, "x", 4096),
            upsertion(Sha::Sha256, "salty", "x", 4096).with_salt(Bytes::from(vec![7u8; 1025])),
        ],
    )
    .await;
    assert_eq!(
        results,
        [
            ("fine".to_owned(), 0, None),
            refused(
                "ghost",
                91,
                "Attempt to delete a user credential that does not exist"
            ),
            refused("", 93, "Username must not be empty"),
            refused("few", 93, "Too few iterations"),
            refused("many", 93, "Too many iterations"),
            refused(
                "twice",
                92,
                "A user credential cannot be altered twice in the same request"
            ),
            refused("odd", 33, "Unknown SCRAM mechanism"),
            refused(
                &long_name,
                93,
                "A user name longer than 1024 bytes is not kept"
            ),
            refused("salty", 93, "A salt longer than 1024 bytes is not kept"),
        ]
    );
    let described = describe(&mut admin, Some(&["fine", "ghost", "fine"])).await;
    let answers: Vec<(String, i16, String)> = described
        .results
        .iter()
        .map(|result| {
            (
                result.user.to_string(),
                result.error_code,
                result.error_message.as_deref().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        answers,
        [
            (
                "fine".to_owned(),
                92,
                "Cannot describe SCRAM credentials for the same user twice in a single request: fine".to_owned()
            ),
            (
                "ghost".to_owned(),
                91,
                "Attempt to describe a user credential that does not exist: ghost".to_owned()
            ),
        ]
    );
    // Without ALTER and DESCRIBE on the cluster.
    let mut anonymous = Client::connect(broker.plaintext_port).await;
    let results = alter(
        &mut anonymous,
        vec![
            ScramCredentialDeletion::default()
                .with_name(text("fine"))
                .with_mechanism(1),
        ],
        vec![
            upsertion(Sha::Sha256, "eve", "x", 4096),
            upsertion(Sha::Sha512, "eve", "x", 4096),
        ],
    )
    .await;
    // Kafka's error answer: each user once, in name order.
    let refused = Some("Cluster authorization failed.".to_owned());
    assert_eq!(
        results,
        [
            (
                "eve".to_owned(),
                CLUSTER_AUTHORIZATION_FAILED,
                refused.clone()
            ),
            ("fine".to_owned(), CLUSTER_AUTHORIZATION_FAILED, refused),
        ]
    );
    let described = describe(&mut anonymous, Some(&["fine", "ghost"])).await;
    assert_eq!(described.error_code, CLUSTER_AUTHORIZATION_FAILED);
    assert_eq!(described.error_message, None);
    let per_user: Vec<(String, i16, Option<String>)> = described
        .results
        .iter()
        .map(|r| {
            (
                r.user.to_string(),
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        })
        .collect();
    assert_eq!(
        per_user,
        [
            (String::new(), CLUSTER_AUTHORIZATION_FAILED, None),
            (String::new(), CLUSTER_AUTHORIZATION_FAILED, None)
        ]
    );
    let still = describe(&mut admin, Some(&["fine"])).await;
    assert_eq!(still.results[0].error_code, 0, "nothing changed");
    assert!(scram(&broker, Sha::Sha256, "eve", "x").await.1.is_err());
}

#[tokio::test]
async fn credentials_survive_a_restart() {
    let temp = tempfile::tempdir().unwrap();
    {
        let broker = start(temp.path()).await;
        let mut admin = alice(&broker).await;
        let results = alter(
            &mut admin,
            vec![],
            vec![upsertion(Sha::Sha512, "dave", "dave-secret", 4096)],
        )
        .await;
        assert_eq!(results[0].1, 0);
    }
    let broker = start(temp.path()).await;
    assert!(
        scram(&broker, Sha::Sha512, "dave", "dave-secret")
            .await
            .1
            .is_ok()
    );
    assert!(
        scram(&broker, Sha::Sha512, "dave", "dave-secreT")
            .await
            .1
            .is_err()
    );
}
