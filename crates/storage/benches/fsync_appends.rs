//! Appends each fsynced (`flush.messages=1`) through the log, against the file system's own rate
//! of the same kind of write: a 1 KiB batch written to the end of a new file, then fdatasync.
//! The two take turns, three runs each, in one process, so the storage engine's share of a
//! broker's fsync'd appends can be told from the network path's.
//!
//! A bench binary, not criterion: `cargo bench -p ferrolog-storage --bench fsync_appends [-- N]`
//! prints `raw appends_per_s=…` and `log appends_per_s=…` lines, N appends (5,000 by default)
//! each.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ferrolog_storage::manager::{LogManager, ManagerConfig};
use ferrolog_storage::{LogConfig, SystemClock, TopicPartition};
use ferrolog_testkit::sized_batch;

const RUNS: usize = 3;
const BATCH_BYTES: usize = 1024;

fn raw(dir: &Path, appends: usize, batch: &[u8]) -> f64 {
    let mut file = std::fs::File::create(dir.join("raw.bin")).unwrap();
    let started = Instant::now();
    for _ in 0..appends {
        file.write_all(batch).unwrap();
        file.sync_data().unwrap();
    }
    appends as f64 / started.elapsed().as_secs_f64()
}

fn log(dir: &Path, appends: usize, batch: &[u8]) -> f64 {
    let config = ManagerConfig {
        log_dirs: vec![dir.join("data")],
        log_defaults: LogConfig {
            flush_messages: 1,
            ..LogConfig::default()
        },
        ..ManagerConfig::default()
    };
    let manager = LogManager::open(config, Arc::new(SystemClock)).unwrap();
    let log = manager
        .get_or_create(&TopicPartition::new("synced", 0))
        .unwrap();
    let started = Instant::now();
    for _ in 0..appends {
        log.append_as_leader(batch.to_vec()).unwrap();
    }
    let rate = appends as f64 / started.elapsed().as_secs_f64();
    drop(log);
    manager.shutdown().unwrap();
    rate
}

fn main() {
    let appends: usize = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(5000);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).unwrap();
    let batch = sized_batch(BATCH_BYTES, 1_700_000_000_000);
    for _ in 0..RUNS {
        let temp = tempfile::tempdir_in(&base).unwrap();
        println!("raw appends_per_s={:.0}", raw(temp.path(), appends, &batch));
        println!("log appends_per_s={:.0}", log(temp.path(), appends, &batch));
    }
}
