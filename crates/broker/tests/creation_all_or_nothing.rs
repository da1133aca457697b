//! A topic is created whole or not at all: CreateTopics that fails part way (out of file
//! descriptors at its fifth partition) leaves no partition and no setting of the topic, and
//! the same request succeeds once descriptors are back.
//!
//! Arms the storage's fault points, which are process-wide: the only test of its binary.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod common;

#[cfg(feature = "failpoints")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_creation_that_fails_part_way_leaves_nothing_of_the_topic() {
    use common::Broker;
    use ferrolog_storage::TopicPartition;

    let temp = tempfile::tempdir().unwrap();
    let broker = Broker::start(temp.path()).await;
    let mut client = broker.client().await;
    let scenario = fail::FailScenario::setup();
    // Four partitions' files open, then the process is out of descriptors.
    fail::cfg("log.open", "4*off->return(EMFILE)").unwrap();
    let refused = client
        .create_topic("half", 10, &[("cleanup.policy", "compact")])
        .await;
    fail::remove("log.open");
    scenario.teardown();
    assert_ne!(refused.error_code, 0, "{refused:?}");
    let manager = &broker.context.manager;
    for partition in 0..10 {
        assert!(
            manager
                .get(&TopicPartition::new("half", partition))
                .is_none()
        );
    }
    let live: Vec<String> = std::fs::read_dir(temp.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("half-") && !name.ends_with("-delete"))
        .collect();
    assert!(live.is_empty(), "partition directories left: {live:?}");
    assert!(
        manager.topic_configs().overrides("half").is_empty(),
        "the topic's settings are forgotten"
    );
    // With descriptors back, the same request creates all of it.
    let created = client.create_topic("half", 10, &[]).await;
    assert_eq!(created.error_code, 0, "{created:?}");
    for partition in 0..10 {
        assert!(
            manager
                .get(&TopicPartition::new("half", partition))
                .is_some()
        );
    }
}
