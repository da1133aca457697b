//! `move-to-kafka copy`: ferrolog's partitions into the empty partition directories of a
//! stopped Kafka broker. Kafka's `partition.metadata` (its topic id) and leader-epoch
//! checkpoint stay; ferrolog's segments, indexes and producer snapshots replace Kafka's empty
//! segment; Kafka's checkpoints take each partition's log start offset, its end as recovery
//! point and high watermark (ferrolog's clean shutdown made it all durable, and every record
//! was acknowledged), and the cleaner's progress. Each copied file is fsynced before the
//! checkpoints name it. Each `__consumer_offsets` partition then ends with its groups'
//! records naming Kafka's topic ids (`group_topic_ids`). ferrolog's `__share_group_state` is
//! not copied: each of Kafka's partitions of it gets the snapshots of the share partitions
//! it places there, under Kafka's ids (`share_state`).

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

use super::segment::{ensure_segment, now_ms, segment_len};
use super::share_state::{PartitionSnapshots, SHARE_STATE_TOPIC, ShareStates, last_leader_epoch};

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
    let ferrolog_cleaner = read_cleaner_offsets(log_dirs)?;
    let kafka_ids = kafka_topic_ids(kafka_log_dirs, &holdings)?;
    let share_snapshots = share_snapshots(kafka_log_dirs, &holdings, &kafka_ids)?;
    let mut updates: BTreeMap<PathBuf, CheckpointUpdates> = BTreeMap::new();
    let mut report = Report::default();
    for (topic_partition, source, log_start, log_end) in &holdings.partitions {
        let Some((kafka_dir, target)) = kafka_partition_dir(kafka_log_dirs, topic_partition) else {
            report.missing.push(topic_partition.to_string());
            continue;
        };
        if !target.join(PARTITION_METADATA_FILE).exists() {
            bail!(
                "{} has no {PARTITION_METADATA_FILE}: it is not a partition Kafka created; run `move-to-kafka create-topics` first",
                target.display()
            );
        }
        let update = updates.entry(kafka_dir).or_default();
        if topic_partition.topic == SHARE_STATE_TOPIC {
            let none = PartitionSnapshots::default();
            let snapshots = share_snapshots
                .get(&topic_partition.partition)
                .unwrap_or(&none);
            let end = write_share_state(&target, snapshots)?;
            report.share_partitions += snapshots.records.len();
            update.log_start.insert(topic_partition.clone(), 0);
            update.end.insert(topic_partition.clone(), end);
            continue;
        }
        let end = copy_with_groups(
            &holdings,
            &kafka_ids,
            topic_partition,
            source,
            &target,
            *log_end,
            &mut report,
        )?;
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
    let complete = report.missing.is_empty();
    report.print(holdings.share_states.as_ref());
    Ok(complete)
}

/// What a `copy` did, for its output.
#[derive(Default)]
struct Report {
    copied: usize,
    already: usize,
    /// Partitions this Kafka broker does not hold.
    missing: Vec<String>,
    rewritten: usize,
    /// Topics groups name that this Kafka broker does not hold.
    unmapped: Vec<String>,
    share_partitions: usize,
}

impl Report {
    fn print(mut self, share_states: Option<&ShareStates>) {
        println!(
            "copied {} partitions into Kafka's directories ({} were already there)",
            self.copied, self.already
        );
        if self.rewritten > 0 {
            println!(
                "{} group records rewritten for Kafka's topic ids",
                self.rewritten
            );
        }
        if self.share_partitions > 0 {
            println!(
                "{} share partitions' state written for Kafka's topic ids",
                self.share_partitions
            );
        }
        if let Some(states) = share_states.filter(|states| states.of_deleted_topics > 0) {
            println!(
                "{} share partitions' state left behind: their topics were deleted",
                states.of_deleted_topics
            );
        }
        self.unmapped.sort();
        self.unmapped.dedup();
        if !self.unmapped.is_empty() {
            println!(
                "consumer groups name topics not held by this Kafka broker, whose ids stay ferrolog's: {}",
                self.unmapped.join(", ")
            );
        }
        if !self.missing.is_empty() {
            println!(
                "not held by this Kafka broker (run `copy` with the directories of the brokers that hold them): {}",
                self.missing.join(", ")
            );
        }
    }
}

/// ferrolog's cleaner progress, from each of its directories.
fn read_cleaner_offsets(log_dirs: &[PathBuf]) -> anyhow::Result<OffsetMap> {
    let mut cleaned = OffsetMap::new();
    for dir in log_dirs {
        let path = dir.join(CLEANER_OFFSET_CHECKPOINT);
        if path.exists() {
            cleaned.extend(read_offset_checkpoint(&path)?);
        }
    }
    Ok(cleaned)
}

/// Copies one partition into Kafka's `target` (unless an earlier `copy` did), then ends a
/// `__consumer_offsets` partition with its groups' records naming Kafka's ids; returns the
/// new log end offset.
fn copy_with_groups(
    holdings: &super::Holdings,
    kafka_ids: &BTreeMap<String, (TopicIdBytes, i32)>,
    topic_partition: &TopicPartition,
    source: &Path,
    target: &Path,
    log_end: i64,
    report: &mut Report,
) -> anyhow::Result<i64> {
    let (groups, not_here) = if topic_partition.topic == OFFSETS_TOPIC {
        holdings
            .group_assignments
            .rewritten(topic_partition.partition, kafka_ids)
    } else {
        Default::default()
    };
    report.unmapped.extend(not_here);
    if holds_records(target)? {
        if !same_files(source, target, log_end)? {
            bail!(
                "{} already holds records: Kafka's data is never overwritten",
                target.display()
            );
        }
        report.already += 1;
    } else {
        copy_partition(source, target)?;
        report.copied += 1;
    }
    report.rewritten += groups.len();
    let epoch = holdings.group_assignments.leader_epoch();
    ensure_segment(target, log_end, epoch, now_ms(), &groups)
}

/// The share partitions' snapshots for each of Kafka's `__share_group_state` partitions.
/// Refused before anything is written when Kafka's topic has more partitions than
/// ferrolog's (`create-topics` checks they are equal), or when this broker holds a partition
/// of it but not every topic with share state, whose ids are then unknown here.
fn share_snapshots(
    kafka_log_dirs: &[PathBuf],
    holdings: &super::Holdings,
    kafka_ids: &BTreeMap<String, (TopicIdBytes, i32)>,
) -> anyhow::Result<BTreeMap<i32, PartitionSnapshots>> {
    let Some(states) = &holdings.share_states else {
        return Ok(BTreeMap::new());
    };
    let beyond = TopicPartition::new(SHARE_STATE_TOPIC, states.partitions);
    if let Some((_, dir)) = kafka_partition_dir(kafka_log_dirs, &beyond) {
        bail!(
            "{} exists but ferrolog's {SHARE_STATE_TOPIC} has {} partitions: share state is placed by the partition count, so both need the same share.coordinator.state.topic.num.partitions",
            dir.display(),
            states.partitions
        );
    }
    let holds_any = (0..states.partitions).any(|partition| {
        kafka_partition_dir(
            kafka_log_dirs,
            &TopicPartition::new(SHARE_STATE_TOPIC, partition),
        )
        .is_some()
    });
    if !holds_any {
        return Ok(BTreeMap::new());
    }
    states.snapshots(kafka_ids, states.partitions)
}

/// Writes `snapshots` as the whole of Kafka's `__share_group_state` partition `target`, which
/// must hold nothing else (but what an earlier `copy` wrote there); returns its log end.
fn write_share_state(target: &Path, snapshots: &PartitionSnapshots) -> anyhow::Result<i64> {
    let epoch = last_leader_epoch(target)?;
    let expected = segment_len(0, epoch, snapshots.timestamp, &snapshots.records)?;
    let logs = data_files(target, &["log"])?;
    let first = format!("{:020}.log", 0);
    let foreign = logs
        .iter()
        .any(|(name, size)| *size > 0 && (*name != first || *size != expected));
    if foreign {
        bail!(
            "{} already holds records: Kafka ran share groups before the move, and its data is never overwritten",
            target.display()
        );
    }
    ensure_segment(target, 0, epoch, snapshots.timestamp, &snapshots.records)
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

/// Kafka's id of each topic the groups and share partitions may name, read from the `partition.metadata`
/// of any partition of it this Kafka broker holds, with its partition count.
fn kafka_topic_ids(
    kafka_log_dirs: &[PathBuf],
    holdings: &super::Holdings,
) -> anyhow::Result<BTreeMap<String, (TopicIdBytes, i32)>> {
    let mut ids = BTreeMap::new();
    let share_topics = holdings
        .share_states
        .iter()
        .flat_map(|states| states.topic_names());
    let topics: std::collections::BTreeSet<&String> = holdings
        .group_assignments
        .topic_names()
        .chain(share_topics)
        .collect();
    for topic in topics {
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
