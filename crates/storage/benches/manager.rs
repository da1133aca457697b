//! LogManager figures over 10,000 partitions:
//! - time to open them after a clean shutdown and after an unclean one, with 1, 2 and 4
//!   recovery threads per data dir;
//! - one pass of each background job over all of them;
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

use ferrolog_records::batch::set_base_offset;
use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};
use ferrolog_storage::{SystemClock, TopicPartition};
use ferrolog_testkit::{numbered_batch, sized_batch};

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
    scheduler_figures(&dir, partitions);
}

/// A background job by name, as the scheduler runs it.
type NamedJob = (
    &'static str,
    fn(&LogManager) -> ferrolog_storage::Result<()>,
);

/// One pass of each job over every partition, then append throughput with and without the
/// jobs running back to back on another thread.
fn scheduler_figures(dir: &Path, partitions: i32) {
    // Deleted files go at once, so the append runs below do not pile up dirty pages of earlier
    // runs (which would bring on the kernel's writeback throttling and skew later runs).
    let mut config = config(dir, 2);
    config.log_defaults.file_delete_delay_ms = 0;
    let manager = Arc::new(LogManager::open(config, Arc::new(SystemClock)).unwrap());
    let passes: [NamedJob; 5] = [
        ("log-retention", LogManager::run_retention),
        ("roll-idle-segments", LogManager::roll_idle_segments),
        ("log-flusher", LogManager::flush_due_logs),
        (
            "recovery-point-checkpoint",
            LogManager::checkpoint_recovery_points,
        ),
        (
            "log-start-offset-checkpoint",
            LogManager::checkpoint_log_start_offsets,
        ),
    ];
    for (name, pass) in passes {
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

    // 256 MiB into a fresh partition per measurement: no roll, and well below the kernel's
    // dirty-page thresholds, so the figure is the append path's, not writeback's.
    let mut buffer = sized_batch(16 * 1024, 1_700_000_000_000);
    let append_256_mib = |partition: i32, buffer: &mut Vec<u8>| {
        let log = manager
            .get_or_create(&TopicPartition::new("append-target", partition))
            .unwrap();
        let started = Instant::now();
        let mut bytes = 0u64;
        while bytes < 256 * 1024 * 1024 {
            set_base_offset(buffer, 0);
            log.append_as_leader(buffer, 0).unwrap();
            bytes += buffer.len() as u64;
        }
        let rate = bytes as f64 / started.elapsed().as_secs_f64() / 1e6;
        manager
            .delete(&TopicPartition::new("append-target", partition))
            .unwrap();
        rate
    };
    append_256_mib(0, &mut buffer); // warm-up
    // The jobs' runs sit between two runs alone, so a drift of the machine itself (writeback of
    // earlier phases, say) shows as a difference between the two and not as the jobs' cost.
    let alone_before = append_256_mib(1, &mut buffer);
    // The inspecting jobs (retention, idle rolls, flush checks), then everything including the
    // checkpoint writes (each an fsync'd file replace), each running back to back.
    let with_jobs = |jobs: &[NamedJob], partition, buffer: &mut Vec<u8>| {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    for (_, pass) in jobs {
                        pass(&manager).unwrap();
                    }
                }
            });
            let rate = append_256_mib(partition, buffer);
            stop.store(true, Ordering::Relaxed);
            rate
        })
    };
    let inspecting = with_jobs(&passes[..3], 2, &mut buffer);
    let everything = with_jobs(&passes, 3, &mut buffer);
    let alone_after = append_256_mib(4, &mut buffer);
    let alone = (alone_before + alone_after) / 2.0;
    println!(
        "append alone_mb_s={alone:.0} alone_before_mb_s={alone_before:.0} alone_after_mb_s={alone_after:.0} with_inspecting_jobs_mb_s={inspecting:.0} inspecting_slowdown_percent={:.1} with_all_jobs_mb_s={everything:.0} all_slowdown_percent={:.1}",
        100.0 * (alone - inspecting) / alone,
        100.0 * (alone - everything) / alone
    );
    manager.shutdown().unwrap();
}
