//! `ferrolog recover --log-dirs D,...`: runs the startup recovery offline — the LogManager
//! opens the directories (recovering every log that was not shut down cleanly, from its
//! recovery point) and shuts down cleanly — and reports what it cut or removed. `--force`
//! recovers even directories that were shut down cleanly. `--salvage` first reads every
//! segment whole and rewrites each damaged one without its damaged stretches, keeping every
//! valid batch after them (the offsets lost are listed in a `.salvaged` file beside the
//! segment), so that nothing is left to cut. The directories must not be in use.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use ferrolog_storage::SystemClock;
use ferrolog_storage::log::Salvage;
use ferrolog_storage::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManagerConfig};

#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// Data directories to recover (comma-separated, as `log.dirs`).
    #[arg(long, required = true, value_delimiter = ',')]
    log_dirs: Vec<PathBuf>,
    /// Recover from the recovery points even where the last shutdown was clean.
    #[arg(long)]
    force: bool,
    /// Read every segment whole and rewrite each damaged one with every valid batch it holds,
    /// before and after the damage, rather than cutting it at the first bad batch.
    #[arg(long)]
    salvage: bool,
}

pub fn run(args: &RecoverArgs) -> anyhow::Result<bool> {
    if args.force {
        for dir in &args.log_dirs {
            let marker = dir.join(CLEAN_SHUTDOWN_FILE);
            if marker.exists() {
                std::fs::remove_file(&marker)
                    .with_context(|| format!("removing {}", marker.display()))?;
                println!("{}: clean-shutdown marker removed (--force)", dir.display());
            }
        }
    }
    let config = ManagerConfig {
        log_dirs: args.log_dirs.clone(),
        // A salvage holds each segment it reads whole in memory: one at a time.
        recovery_threads_per_data_dir: if args.salvage {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        },
        salvage: if args.salvage {
            Salvage::Everything
        } else {
            Salvage::Off
        },
        ..ManagerConfig::default()
    };
    let manager =
        LogManager::open(config, Arc::new(SystemClock)).context("opening the data directories")?;
    let report = manager.startup_report();
    println!(
        "Loaded {} logs; {} segments recovered.",
        report.logs_loaded, report.segments_recovered
    );
    for dir in &report.offline_dirs {
        println!("{}: could not be used (see the log above)", dir.display());
    }
    let mut changed = report.changed.clone();
    changed.sort_by(|a, b| a.0.cmp(&b.0));
    for (topic_partition, load) in &changed {
        println!("{topic_partition}:");
        for segment in &load.salvaged {
            print_salvaged(segment);
        }
        if !load.salvaged.is_empty()
            && let Some(log) = manager.get(topic_partition)
        {
            print_open_transactions(topic_partition, &log, &load.salvaged);
        }
        for segment in load.recovered.iter().filter(|s| s.truncated_bytes > 0) {
            let reason = segment
                .corruption
                .as_ref()
                .map(|(position, reason)| format!(" (at byte {position}: {reason})"))
                .unwrap_or_default();
            println!(
                "  {}: cut {} bytes, kept {}{reason}",
                segment.log_file.display(),
                segment.truncated_bytes,
                segment.valid_bytes
            );
        }
        for path in &load.removed_segments {
            println!("  removed segment {}", path.display());
        }
        for path in &load.removed_files {
            println!("  removed leftover {}", path.display());
        }
        for path in &load.completed_swaps {
            println!("  completed swap {}", path.display());
        }
        for damaged in &load.damaged {
            println!(
                "  damaged, left in place: {} at byte {}: {}",
                damaged.log_file.display(),
                damaged.position,
                damaged.reason
            );
        }
    }
    if changed.is_empty() {
        println!("Nothing was cut or removed.");
    }
    manager.shutdown().context("shutting down cleanly")?;
    println!("Shut down cleanly: checkpoints and clean-shutdown markers written.");
    let damage_left = changed.iter().any(|(_, load)| !load.damaged.is_empty());
    if damage_left {
        println!(
            "Damaged bytes were left in place; `ferrolog verify` lists every damaged place. A directory that was shut down cleanly is not recovered: `--force` recovers it, cutting damage at the end of a log."
        );
    }
    Ok(report.offline_dirs.is_empty() && !damage_left)
}

/// One salvaged segment's lines: what it kept and each stretch it dropped.
fn print_salvaged(segment: &ferrolog_storage::log::SalvagedSegment) {
    let what = if segment.removed {
        "removed, nothing in it was valid".to_owned()
    } else if segment.indexes_rebuilt {
        "its data is whole; its indexes disagreed with it and were rebuilt".to_owned()
    } else {
        format!("salvaged, kept {} bytes", segment.kept_bytes)
    };
    println!("  {}: {what}", segment.log_file.display());
    for stretch in &segment.lost {
        let offsets = match &stretch.offsets {
            Some(offsets) if offsets.is_empty() => "no offsets".to_owned(),
            Some(offsets) => format!("offsets {}-{}", offsets.start, offsets.end - 1),
            None => "offsets unknown (the log's end)".to_owned(),
        };
        println!(
            "    lost {offsets} (bytes {}-{}): {}",
            stretch.bytes.start, stretch.bytes.end, stretch.reason
        );
    }
}

/// The transactions still open in a salvaged log that began before a stretch salvage dropped:
/// their marker may have been in it. Kafka's tools end such a transaction.
fn print_open_transactions(
    topic_partition: &ferrolog_storage::TopicPartition,
    log: &ferrolog_storage::log::Log,
    salvaged: &[ferrolog_storage::log::SalvagedSegment],
) {
    for txn in log.possibly_unended(salvaged) {
        println!(
            "    transaction of producer {} open since offset {}: if its marker was lost, end it with `kafka-transactions --bootstrap-server ... abort --topic {} --partition {} --start-offset {}`",
            txn.producer_id,
            txn.first_offset,
            topic_partition.topic,
            topic_partition.partition,
            txn.first_offset
        );
    }
}
