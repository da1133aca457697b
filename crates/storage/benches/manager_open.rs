//! Time to open 10,000 partitions through the LogManager after a clean shutdown and after an
//! unclean one, with 1, 2 and 4 recovery threads per data dir. A bench binary rather than
//! criterion: each sample needs a full shutdown in between, which takes longer than the open.
//!
//! `cargo bench -p ferrolog-storage --bench manager_open [-- PARTITIONS]` prints one line per
//! case: `open <clean|unclean> threads=<n> median_ms=<m> runs=<ms,...>`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use ferrolog_testkit::numbered_batch;

const RUNS: usize = 3;

fn config(dir: &Path, threads: usize) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        recovery_threads_per_data_dir: threads,
        ..ManagerConfig::default()
    }
}

fn main() {
    let partitions: i32 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(10_000);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-data");
    std::fs::create_dir_all(&base).unwrap();
    let temp = tempfile::tempdir_in(&base).unwrap();
    let dir = temp.path().join("data");

    let started = Instant::now();
    let manager = LogManager::open(config(&dir, 4), Arc::new(SystemClock)).unwrap();
    for partition in 0..partitions {
        let log = manager
            .get_or_create(&TopicPartition::new(
                format!("topic-{}", partition % 100),
                partition / 100,
            ))
            .unwrap();
        for batch in 0..4 {
            log.append_as_leader(&mut numbered_batch(batch * 4, 4, 1_700_000_000_000), 0)
                .unwrap();
        }
    }
    manager.shutdown().unwrap();
    drop(manager);
    eprintln!(
        "created {partitions} partitions in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    for clean in [true, false] {
        for threads in [1, 2, 4] {
            let mut runs = Vec::new();
            for _ in 0..RUNS {
                if !clean {
                    std::fs::remove_file(dir.join(CLEAN_SHUTDOWN_FILE)).unwrap();
                }
                let started = Instant::now();
                let manager =
                    LogManager::open(config(&dir, threads), Arc::new(SystemClock)).unwrap();
                runs.push(started.elapsed().as_secs_f64() * 1e3);
                assert_eq!(manager.startup_report().logs_loaded, partitions as usize);
                let recovered = manager.startup_report().segments_recovered;
                assert_eq!(
                    recovered == 0,
                    clean,
                    "clean opens scan nothing, unclean ones every active segment"
                );
                manager.shutdown().unwrap();
            }
            let mut sorted = runs.clone();
            sorted.sort_by(f64::total_cmp);
            println!(
                "open {} threads={threads} partitions={partitions} median_ms={:.0} runs={}",
                if clean { "clean" } else { "unclean" },
                sorted[RUNS / 2],
                runs.iter()
                    .map(|ms| format!("{ms:.0}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
    }
}
