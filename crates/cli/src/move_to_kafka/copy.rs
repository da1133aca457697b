//! `move-to-kafka copy`: ferrolog's partitions into the empty partition directories of a
//! stopped Kafka broker. Kafka's `partition.metadata` (its topic id) and leader-epoch
//! checkpoint stay; ferrolog's segments, indexes and producer snapshots replace Kafka's empty
//! segment; Kafka's checkpoints take each partition's log start offset, its end as recovery
//! point and high watermark (ferrolog's clean shutdown made it all durable, and every record
//! was acknowledged), and the cleaner's progress. Each copied file is fsynced before the
//! checkpoints name it. Each `__consumer_offsets` partition then ends with its consumer
//! groups' assignment records naming Kafka's topic ids (`group_topic_ids`).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use ferrolog_coordinator::group::offsets_topic::OFFSETS_TOPIC;
use ferrolog_records::consumer_group_records::TopicIdBytes;
use ferrolog_storage::TopicPartition;
use ferrolog_storage::checkpoint::{
    CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, OffsetMap, RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint, write_offset_checkpoint,
};
use ferrolog_storage::manager::{PARTITION_METADATA_FILE, read_topic_id};

use super::group_topic_ids::ensure_segment;

/// Kafka's marker of a clean shutdown; it deletes it once it starts.
const KAFKA_CLEAN_SHUTDOWN: &str = ".kafka_cleanshutdown";
/// Kafka's high-watermark checkpoint.
const HIGH_WATERMARK_CHECKPOINT: &str = "replication-offset-checkpoint";
/// The files of a partition that carry its data.
const DATA_FILES: &[&str] = &["log", "index", "timeindex", "snapshot"];
/// Kafka's files that a copy replaces (its transaction index included: ferrolog writes none).
const KAFKA_DATA_FILES: &[&str] = &["log", "index", "timeindex", "snapshot", "txnindex"];

/// What the Kafka checkpoints of one directory get.
#[derive(Default)]
struct CheckpointUpdates {
    log_start: OffsetMap,
    end: OffsetMap,
    cleaner: OffsetMap,
}

pub fn run(log_dirs: &[PathBuf], kafka_log_dirs: &[PathBuf]) -> anyhow::Result<bool> {
    for dir in kafka_log_dirs {
        if !dir.join(KAFKA_CLEAN_SHUTDOWN).exists() {
            bail!(
                "{} holds no {KAFKA_CLEAN_SHUTDOWN}: the Kafka broker using it is running or did not stop cleanly; stop it cleanly first",
                dir.display()
            );
        }
    }
    let holdings = super::read_holdings(log_dirs)?;
    let mut ferrolog_cleaner = OffsetMap::new();
    for dir in log_dirs {
        let path = dir.join(CLEANER_OFFSET_CHECKPOINT);
        if path.exists() {
            ferrolog_cleaner.extend(read_offset_checkpoint(&path)?);
        }
    }
    let kafka_ids = kafka_topic_ids(kafka_log_dirs, &holdings)?;
    let mut updates: BTreeMap<PathBuf, CheckpointUpdates> = BTreeMap::new();
    let (mut copied, mut already, mut missing) = (0, 0, Vec::new());
    let (mut rewritten, mut unmapped) = (0, Vec::new());
    for (topic_partition, source, log_start, log_end) in &holdings.partitions {
        let Some((kafka_dir, target)) = kafka_partition_dir(kafka_log_dirs, topic_partition) else {
            missing.push(topic_partition.to_string());
            continue;
        };
        if !target.join(PARTITION_METADATA_FILE).exists() {
            bail!(
                "{} has no {PARTITION_METADATA_FILE}: it is not a partition Kafka created; run `move-to-kafka create-topics` first",
                target.display()
            );
        }
        let (groups, not_here) = if topic_partition.topic == OFFSETS_TOPIC {
            holdings
                .group_assignments
                .rewritten(topic_partition.partition, &kafka_ids)
        } else {
            Default::default()
        };
        unmapped.extend(not_here);
        if holds_records(&target)? {
            if !same_files(source, &target, *log_end)? {
                bail!(
                    "{} already holds records: Kafka's data is never overwritten",
                    target.display()
                );
            }
            already += 1;
        } else {
            copy_partition(source, &target)?;
            copied += 1;
        }
        rewritten += groups.len();
        let epoch = holdings.group_assignments.leader_epoch();
        let end = ensure_segment(&target, *log_end, epoch, &groups)?;
        let update = updates.entry(kafka_dir).or_default();
        update.log_start.insert(topic_partition.clone(), *log_start);
        update.end.insert(topic_partition.clone(), end);
        if let Some(cleaned_to) = ferrolog_cleaner.get(topic_partition) {
            update.cleaner.insert(topic_partition.clone(), *cleaned_to);
        }
    }
    for (kafka_dir, update) in &updates {
        merge_checkpoint(
            &kafka_dir.join(LOG_START_OFFSET_CHECKPOINT),
            &update.log_start,
        )?;
        merge_checkpoint(&kafka_dir.join(RECOVERY_POINT_CHECKPOINT), &update.end)?;
        merge_checkpoint(&kafka_dir.join(HIGH_WATERMARK_CHECKPOINT), &update.end)?;
        if !update.cleaner.is_empty() {
            merge_checkpoint(&kafka_dir.join(CLEANER_OFFSET_CHECKPOINT), &update.cleaner)?;
        }
    }
    println!("copied {copied} partitions into Kafka's directories ({already} were already there)");
    if rewritten > 0 {
        println!("{rewritten} consumer-group records rewritten for Kafka's topic ids");
    }
    unmapped.sort();
    unmapped.dedup();
    if !unmapped.is_empty() {
        println!(
            "consumer groups name topics not held by this Kafka broker, whose ids stay ferrolog's: {}",
            unmapped.join(", ")
        );
    }
    if !missing.is_empty() {
        println!(
            "not held by this Kafka broker (run `copy` with the directories of the brokers that hold them): {}",
            missing.join(", ")
        );
    }
    Ok(missing.is_empty())
}

/// The Kafka directory holding `topic_partition`, and the partition's directory in it.
fn kafka_partition_dir(
    kafka_log_dirs: &[PathBuf],
    topic_partition: &TopicPartition,
) -> Option<(PathBuf, PathBuf)> {
    let name = format!("{}-{}", topic_partition.topic, topic_partition.partition);
    kafka_log_dirs
        .iter()
        .map(|dir| (dir.clone(), dir.join(&name)))
        .find(|(_, target)| target.is_dir())
}

/// The files of `dir` whose extension is one of `kinds`, by name, with their sizes.
fn data_files(dir: &Path, kinds: &[&str]) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        let path = entry.path();
        let kind = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if kinds.contains(&kind) {
            let size = entry
                .metadata()
                .with_context(|| format!("reading {}", path.display()))?
                .len();
            files.insert(entry.file_name().to_string_lossy().into_owned(), size);
        }
    }
    Ok(files)
}

fn holds_records(kafka_partition: &Path) -> anyhow::Result<bool> {
    Ok(data_files(kafka_partition, &["log"])?
        .values()
        .any(|size| *size > 0))
}

/// Whether a previous `copy` already put exactly ferrolog's files there, but for the segment
/// starting at `log_end`: ferrolog's is empty (an idle active segment), Kafka's may hold the
/// rewritten group records.
fn same_files(source: &Path, target: &Path, log_end: i64) -> anyhow::Result<bool> {
    let tail = format!("{log_end:020}.");
    let without_tail = |mut files: BTreeMap<String, u64>| {
        files.retain(|name, _| !name.starts_with(&tail));
        files
    };
    Ok(without_tail(data_files(source, DATA_FILES)?)
        == without_tail(data_files(target, DATA_FILES)?))
}

/// Kafka's id of each topic the consumer groups may name, read from the `partition.metadata`
/// of any partition of it this Kafka broker holds, with its partition count.
fn kafka_topic_ids(
    kafka_log_dirs: &[PathBuf],
    holdings: &super::Holdings,
) -> anyhow::Result<BTreeMap<String, (TopicIdBytes, i32)>> {
    let mut ids = BTreeMap::new();
    for topic in holdings.group_assignments.topic_names() {
        let count = holdings
            .topics
            .iter()
            .find(|(name, _, _)| name == topic)
            .map_or(0, |(_, count, _)| *count);
        let held = (0..count).find_map(|partition| {
            kafka_partition_dir(kafka_log_dirs, &TopicPartition::new(topic, partition))
        });
        if let Some((_, dir)) = held
            && let Some(id) = read_topic_id(&dir)?
        {
            ids.insert(topic.clone(), (id.0, count));
        }
    }
    Ok(ids)
}

fn copy_partition(source: &Path, target: &Path) -> anyhow::Result<()> {
    for name in data_files(target, KAFKA_DATA_FILES)?.keys() {
        let path = target.join(name);
        std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
    }
    for name in data_files(source, DATA_FILES)?.keys() {
        let (from, to) = (source.join(name), target.join(name));
        std::fs::copy(&from, &to)
            .with_context(|| format!("copying {} to {}", from.display(), to.display()))?;
        File::open(&to)
            .and_then(|file| file.sync_all())
            .with_context(|| format!("fsync {}", to.display()))?;
    }
    File::open(target)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("fsync {}", target.display()))?;
    Ok(())
}

/// Sets `entries` in the checkpoint at `path`, keeping its other entries.
fn merge_checkpoint(path: &Path, entries: &OffsetMap) -> anyhow::Result<()> {
    let mut all = if path.exists() {
        read_offset_checkpoint(path)?
    } else {
        OffsetMap::new()
    };
    all.extend(entries.iter().map(|(tp, offset)| (tp.clone(), *offset)));
    write_offset_checkpoint(path, &all)?;
    Ok(())
}
