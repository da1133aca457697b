//! The coordinator's settings.

use std::sync::Arc;
use std::sync::atomic::AtomicI16;
use std::time::Duration;

/// The coordinator's settings, under Kafka's broker keys.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions`
    pub state_log_partitions: i32,
    /// `transaction.state.log.segment.bytes`
    pub state_log_segment_bytes: u64,
    /// `transaction.max.timeout.ms`: the longest `transaction.timeout.ms` a producer may ask for.
    pub max_timeout: Duration,
    /// `transactional.id.expiration.ms`: how long an id with no transaction open is kept idle.
    pub id_expiration: Duration,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`
    pub abort_timed_out_interval: Duration,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`
    pub remove_expired_interval: Duration,
    /// `ferrolog.max.transactional.ids`: the most ids kept at once; an InitProducerId for a new
    /// one beyond it is refused (POLICY_VIOLATION). Kafka has no such limit.
    pub max_transactional_ids: usize,
    /// The cluster's `transaction.version`, which the coordinator's own aborts (fencing,
    /// timeouts) follow, as Kafka's follow the cluster's level: 2 (a new Kafka 4.4 cluster's)
    /// by default, `ferrolog.transaction.version` at startup, then what UpdateFeatures sets
    /// (the broker's features keep it; the coordinator reads it at each abort).
    pub transaction_version: Arc<AtomicI16>,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            state_log_partitions: 50,
            state_log_segment_bytes: 104_857_600,
            max_timeout: Duration::from_millis(900_000),
            id_expiration: Duration::from_millis(604_800_000),
            abort_timed_out_interval: Duration::from_millis(10_000),
            remove_expired_interval: Duration::from_millis(3_600_000),
            max_transactional_ids: 100_000,
            transaction_version: Arc::new(AtomicI16::new(2)),
        }
    }
}
