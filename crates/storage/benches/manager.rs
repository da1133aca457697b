//! LogManager figures over 10,000 partitions:
//! - time to open them after a clean shutdown and after an unclean one, with 1, 2 and 4
//!   recovery threads per data dir;
//! - one pass of each background job over all of them, and a change of the topics' defaults
//!   reaching all of them;
//! - append throughput to one partition alone, and while the jobs run back to back.
//!
//! A bench binary rather than criterion: each open sample needs a full shutdown in between,
//! which takes longer than the open. `cargo bench -p ferrolog-storage --bench manager
//! [-- PARTITIONS]` prints one line per figure (`open …`, `job …`, `append …`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benches fail loudly"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use std::sync::atomic::{AtomicBool, Ordering};

use ferrolog_storage::Offset;
use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use ferrolog_testkit::{numbered_batch, sized_batch};

const RUNS: usize = 3;

fn config(dir: &Path, threads: usize) -> ManagerConfig {
    ManagerConfig {
        log_dirs: vec![dir.to_path_buf()],
        recovery_threads_per_data_dir: threads,
        // The benches create 10,000 partitions and then some.
        max_partitions: 100_000,
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
            log.append_as_leader(numbered_batch(batch * 4, 4, 1_700_000_000_000))
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
    scheduler_figures(&dir, partitions);
}

/// A background job by name, as the scheduler runs it.
type NamedJob = (
    &'static str,
    fn(&LogManager) -> ferrolog_storage::Result<()>,
);

/// The passes measured: each background job's, and a change of the topics' defaults.
const PASSES: [NamedJob; 6] = [
    ("log-retention", |manager| manager.jobs().run_retention()),
    ("roll-idle-segments", |manager| {
        manager.jobs().roll_idle_segments()
    }),
    ("log-flusher", |manager| manager.jobs().flush_due_logs()),
    ("recovery-point-checkpoint", |manager| {
        manager.jobs().checkpoint_recovery_points()
    }),
    ("log-start-offset-checkpoint", |manager| {
        manager.jobs().checkpoint_log_start_offsets()
    }),
    // Not a job: a topic default changed at run time (a dynamic broker config), which
    // every live log takes at once.
    ("topic-defaults-change", |manager| {
        let configs = manager.topic_configs();
        configs.set_defaults(configs.defaults().with([("retention.ms", "86400000")])?);
        Ok(())
    }),
];

/// One pass of each job over every partition, then append throughput with and without the
/// jobs running back to back on another thread.
fn scheduler_figures(dir: &Path, partitions: i32) {
    // Deleted files go at once, so the append runs below do not pile up dirty pages of earlier
    // runs (which would bring on the kernel's writeback throttling and skew later runs).
    let mut config = config(dir, 2);
    config.log_defaults.file_delete_delay = std::time::Duration::ZERO;
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    for (name, pass) in PASSES {
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let started = Instant::now();
            pass(&manager).unwrap();
            runs.push(started.elapsed().as_secs_f64() * 1e3);
        }
        runs.sort_by(f64::total_cmp);
        println!(
            "job {name} partitions={partitions} median_ms={:.1}",
            runs[RUNS / 2]
        );
    }

    // 256 MiB into one partition per measurement: no roll, and well below the kernel's
    // dirty-page thresholds, so the figure is the append path's, not writeback's. Truncating the
    // log afterwards frees its page cache at once, so every run writes into memory just freed
    // (this VM backs memory it has not touched lately far more slowly; see docs/benchmarks.md).
    // Each append gets a fresh copy of one template, made just before it and not timed.
    let mut buffer = sized_batch(16 * 1024, 1_700_000_000_000);
    let target = manager
        .get_or_create(&TopicPartition::new("append-target", 0))
        .unwrap();
    let append_256_mib = |template: &mut Vec<u8>| {
        let mut appending = std::time::Duration::ZERO;
        let mut bytes = 0u64;
        while bytes < 256 * 1024 * 1024 {
            let records = template.clone();
            let started = Instant::now();
            target.append_as_leader(records).unwrap();
            appending += started.elapsed();
            bytes += template.len() as u64;
        }
        let rate = bytes as f64 / appending.as_secs_f64() / 1e6;
        target.truncate_to(Offset::ZERO).unwrap();
        rate
    };
    append_256_mib(&mut buffer); // warm-up
    // The inspecting jobs (retention, idle rolls, flush checks), then everything including the
    // checkpoint writes (each an fsync'd file replace), each running back to back.
    let with_jobs = |jobs: &[NamedJob], buffer: &mut Vec<u8>| {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    for (_, pass) in jobs {
                        pass(&manager).unwrap();
                    }
                }
            });
            let rate = append_256_mib(buffer);
            stop.store(true, Ordering::Relaxed);
            rate
        })
    };
    // One run takes a tenth of a second, so single runs are noisy: the three cases take turns
    // for several rounds (a drift of the machine itself, writeback of earlier phases say,
    // touches all three alike) and the medians are compared.
    const APPEND_ROUNDS: usize = 7;
    let (mut alone, mut inspecting, mut everything) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..APPEND_ROUNDS {
        alone.push(append_256_mib(&mut buffer));
        inspecting.push(with_jobs(&PASSES[..3], &mut buffer));
        // The jobs only: the change of the defaults is no job.
        everything.push(with_jobs(&PASSES[..5], &mut buffer));
    }
    let median = |rates: &mut Vec<f64>| {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let (alone, inspecting, everything) = (
        median(&mut alone),
        median(&mut inspecting),
        median(&mut everything),
    );
    println!(
        "append rounds={APPEND_ROUNDS} alone_mb_s={alone:.0} with_inspecting_jobs_mb_s={inspecting:.0} inspecting_slowdown_percent={:.1} with_all_jobs_mb_s={everything:.0} all_slowdown_percent={:.1}",
        100.0 * (alone - inspecting) / alone,
        100.0 * (alone - everything) / alone
    );
    manager.shutdown().unwrap();
}
