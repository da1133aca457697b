//! `ferrolog.max.transactional.ids` cannot be turned into a lockout: at the limit a new id
//! makes room by forgetting the least recently used id with no transaction open, ids that
//! never began a transaction first, so a client creating ids by the thousand keeps the table
//! full of its own and costs the others nothing; an id with a transaction open is never
//! forgotten; what is forgotten stays forgotten across a restart.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use ferrolog_broker::group::{GroupConfig, GroupCoordinator};
use ferrolog_broker::txn::{TransactionCoordinator, TxnConfig};
use ferrolog_records::transaction_state::TxnStatus;
use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{ManualClock, ProducerEpoch};

const LIMIT: usize = 5;
const POLICY_VIOLATION: i16 = 44;

struct Node {
    manager: Arc<LogManager>,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
}

fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Node {
    let manager = Arc::new(
        LogManager::open(
            ManagerConfig {
                log_dirs: vec![dir.to_path_buf()],
                ..ManagerConfig::default()
            },
            Arc::clone(clock) as Arc<dyn ferrolog_storage::Clock>,
        )
        .unwrap(),
    );
    manager
        .get_or_create(&ferrolog_storage::TopicPartition::new("orders", 0))
        .unwrap();
    let groups = GroupCoordinator::open(
        Arc::clone(&manager),
        GroupConfig {
            offsets_topic_partitions: 1,
            ..GroupConfig::default()
        },
    )
    .unwrap();
    let transactions = TransactionCoordinator::open(
        Arc::clone(&manager),
        TxnConfig {
            state_log_partitions: 1,
            max_transactional_ids: LIMIT,
            ..TxnConfig::default()
        },
    )
    .unwrap();
    // As a client's FindCoordinator does: the internal topics are made.
    groups.find_coordinator().unwrap();
    transactions.find_coordinator().unwrap();
    Node {
        manager,
        groups,
        transactions,
    }
}

impl Node {
    fn init(&self, id: &str) -> Result<(i64, ProducerEpoch), i16> {
        self.transactions
            .init_producer_id(&self.groups, id, 60_000, None)
            .answer
    }

    /// Begins a transaction of `id` (one partition added); with `commit`, ends it.
    fn transact(&self, id: &str, producer: (i64, ProducerEpoch), commit: bool) {
        let partitions = [("orders".to_owned(), 0)];
        let added = self
            .transactions
            .add_partitions(id, producer.0, producer.1, &partitions, 0);
        assert_eq!(added, 0);
        if commit {
            let ended = self
                .transactions
                .end_txn(&self.groups, id, producer, true, false);
            assert_eq!(ended.answer.code, 0);
        }
    }

    fn state(&self, id: &str) -> Option<TxnStatus> {
        self.transactions.describe(id).map(|d| d.state)
    }
}

#[test]
fn a_full_table_of_transactional_ids_locks_no_one_out() {
    let temp = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let node = open(temp.path(), &clock);
    // Four applications with a transaction behind them, one in the middle of one: full.
    for id in ["app-a", "app-b", "app-c", "app-d"] {
        clock.advance_ms(10);
        let producer = node.init(id).unwrap();
        node.transact(id, producer, true);
    }
    clock.advance_ms(10);
    let open_one = node.init("app-open").unwrap();
    node.transact("app-open", open_one, false);

    // A client makes ids by the thousand, never beginning a transaction.
    for i in 0..1000 {
        clock.advance_ms(1);
        assert!(node.init(&format!("junk-{i}")).is_ok(), "junk-{i}");
    }
    // Only one application's id made room for the first of them; the others are kept.
    let kept: Vec<&str> = ["app-a", "app-b", "app-c", "app-d"]
        .into_iter()
        .filter(|id| node.state(id).is_some())
        .collect();
    assert_eq!(
        kept,
        ["app-b", "app-c", "app-d"],
        "the least recently used went"
    );
    assert_eq!(
        node.state("app-open"),
        Some(TxnStatus::Ongoing),
        "never forgotten"
    );
    assert_eq!(node.transactions.list().len(), LIMIT);

    // Another application still gets an id (in the junk's place), and its transaction works.
    clock.advance_ms(10);
    let newcomer = node.init("app-new").unwrap();
    node.transact("app-new", newcomer, true);
    let kept = ["app-b", "app-c", "app-d"]
        .iter()
        .all(|id| node.state(id).is_some());
    assert!(kept, "the applications are kept");

    // With every id in a transaction, a new one is refused rather than one forgotten.
    for id in ["app-b", "app-c", "app-d", "app-new"] {
        let producer = node.init(id).unwrap();
        node.transact(id, producer, false);
    }
    assert_eq!(node.init("one-more"), Err(POLICY_VIOLATION));

    // Forgotten ids stay forgotten: their tombstones were written.
    drop(node.transactions);
    let reopened = TransactionCoordinator::open(
        Arc::clone(&node.manager),
        TxnConfig {
            state_log_partitions: 1,
            max_transactional_ids: LIMIT,
            ..TxnConfig::default()
        },
    )
    .unwrap();
    assert_eq!(reopened.list().len(), LIMIT);
    assert!(reopened.describe("app-a").is_none());
    node.manager.shutdown().unwrap();
}
