//! `ferrolog verify --log-dirs D,...`: an offline check of whole data directories, Kafka's or
//! ferrolog's. Nothing is changed. Every batch's checksum and offsets, every index and time
//! index against its log, producer snapshots, the checkpoints against the logs, and leftover
//! files of interrupted operations; each problem is named by file and position. Progress goes
//! to stderr every two seconds; the exit status is non-zero when anything is wrong.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use ferrolog_storage::TopicPartition;
use ferrolog_storage::checkpoint::{
    CLEANER_OFFSET_CHECKPOINT, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
    parse_offset_checkpoint,
};
use ferrolog_storage::manager::CLEAN_SHUTDOWN_FILE;
use ferrolog_storage::producer::snapshot;
use ferrolog_storage::segment::{
    INDEX_SUFFIX, LOG_SUFFIX, SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX,
    parse_base_offset,
};
use ferrolog_storage::types::{PartitionDirKind, parse_partition_dir};

use crate::check;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Data directories to check (comma-separated, as `log.dirs`).
    #[arg(long, required = true, value_delimiter = ',')]
    log_dirs: Vec<PathBuf>,
}

/// Kafka's high-watermark checkpoint, checked like the others.
const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";

/// Suffixes of files an interrupted or pending operation leaves; startup settles them, so they
/// are notes, not problems (`.deleted` files wait out `file.delete.delay.ms` even after a clean
/// stop).
const LEFTOVER_SUFFIXES: &[(&str, &str)] = &[
    (".swap", "an interrupted cleaner swap"),
    (".cleaned", "an interrupted cleaning"),
    (".deleted", "a deletion not yet carried out"),
    (".tmp", "an interrupted file replacement"),
];

#[derive(Debug, Default)]
struct Totals {
    dirs: usize,
    partitions: usize,
    segments: usize,
    segments_to_check: usize,
    batches: u64,
    bytes: u64,
    problems: Vec<String>,
    /// Problems counted in a "more problems" line rather than listed one by one.
    unlisted: usize,
    /// Worth knowing, not wrong.
    notes: Vec<String>,
}

/// Problems listed per file; the rest of a badly damaged file's are counted, not listed.
const LISTED_PER_FILE: usize = 10;

impl Totals {
    fn problem(&mut self, path: &Path, what: impl std::fmt::Display) {
        self.problems.push(format!("{}: {what}", path.display()));
    }

    fn note(&mut self, path: &Path, what: impl std::fmt::Display) {
        self.notes.push(format!("{}: {what}", path.display()));
    }

    /// Adds one file's problems: the first few listed, the others counted in one line.
    fn file_problems(&mut self, path: &Path, problems: Vec<String>) {
        let total = problems.len();
        for problem in problems.into_iter().take(LISTED_PER_FILE) {
            self.problem(path, problem);
        }
        if total > LISTED_PER_FILE {
            self.problem(
                path,
                format!(
                    "... and {} more problems in this file",
                    total - LISTED_PER_FILE
                ),
            );
            self.unlisted += total - LISTED_PER_FILE - 1;
        }
    }
}

/// What one partition's log ends at, for the checkpoint checks.
#[derive(Debug, Clone, Copy)]
struct LogExtent {
    first_base: i64,
    end_offset: i64,
}

pub fn run(args: &VerifyArgs) -> anyhow::Result<bool> {
    let mut totals = Totals::default();
    let partitions: Vec<(PathBuf, Vec<PathBuf>)> = args
        .log_dirs
        .iter()
        .map(|dir| Ok((dir.clone(), partition_dirs(dir)?)))
        .collect::<anyhow::Result<_>>()?;
    totals.segments_to_check = partitions
        .iter()
        .flat_map(|(_, dirs)| dirs)
        .map(|dir| count_suffix(dir, LOG_SUFFIX))
        .sum();
    let mut progress = Progress::new();
    for (dir, partition_dirs) in &partitions {
        totals.dirs += 1;
        let stopped_cleanly = dir.join(CLEAN_SHUTDOWN_FILE).exists();
        let mut extents = BTreeMap::new();
        for partition_dir in partition_dirs {
            if let Some((topic_partition, extent)) =
                verify_partition(partition_dir, stopped_cleanly, &mut totals, &mut progress)?
            {
                extents.insert(topic_partition, extent);
            }
        }
        verify_top_level(dir, &extents, &mut totals)?;
    }
    println!(
        "Verified {} data director{}, {} partitions, {} segments, {} batches ({:.1} MiB).",
        totals.dirs,
        if totals.dirs == 1 { "y" } else { "ies" },
        totals.partitions,
        totals.segments,
        totals.batches,
        totals.bytes as f64 / (1u64 << 20) as f64
    );
    for note in &totals.notes {
        println!("note: {note}");
    }
    if totals.problems.is_empty() {
        println!("No problems found.");
        return Ok(true);
    }
    println!("{} problem(s):", totals.problems.len() + totals.unlisted);
    for problem in &totals.problems {
        println!("  {problem}");
    }
    Ok(false)
}

/// The partition directories of a data directory, sorted.
fn partition_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir)
        .with_context(|| format!("reading data directory {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading data directory {}", dir.display()))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

fn count_suffix(dir: &Path, suffix: &str) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(suffix))
                .count()
        })
        .unwrap_or(0)
}

fn sorted_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    files.sort();
    Ok(files)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn verify_partition(
    dir: &Path,
    stopped_cleanly: bool,
    totals: &mut Totals,
    progress: &mut Progress,
) -> anyhow::Result<Option<(TopicPartition, LogExtent)>> {
    let (topic_partition, kind) = match parse_partition_dir(dir) {
        Ok(parsed) => parsed,
        Err(error) => {
            totals.problem(dir, error);
            return Ok(None);
        }
    };
    if kind == PartitionDirKind::Delete {
        // A deleted partition waiting for removal: its files are not checked.
        return Ok(None);
    }
    totals.partitions += 1;
    let mut logs = segment_logs(dir, totals)?;
    logs.sort();
    let mut extent = LogExtent {
        first_base: logs.first().map_or(0, |(base, _)| *base),
        end_offset: logs.first().map_or(0, |(base, _)| *base),
    };
    for (index, (base, log)) in logs.iter().enumerate() {
        totals.segments += 1;
        let checked = match check::log_file(log, |_, _, _| {}) {
            Ok(checked) => checked,
            Err(error) => {
                // Damage the scan cannot step over: reported, and the next segment checked.
                totals.problem(log, format!("{error:#}"));
                progress.tick(totals);
                continue;
            }
        };
        totals.batches += checked.batches;
        totals.bytes += checked.bytes;
        totals.file_problems(log, checked.problems);
        let next_base = logs.get(index + 1).map(|(next, _)| *next);
        if let Some(tail) = &checked.tail {
            report_tail(totals, log, tail, next_base.is_none(), stopped_cleanly);
        }
        if let (Some(next_offset), Some(next_base)) = (checked.next_offset, next_base)
            && next_offset > next_base
        {
            totals.problem(
                log,
                format!(
                    "its last offset {} reaches into the next segment, based at {next_base}",
                    next_offset - 1
                ),
            );
        }
        extent.end_offset = checked.next_offset.unwrap_or(*base).max(extent.end_offset);
        check_indexes_of(log, totals);
        progress.tick(totals);
    }
    Ok(Some((topic_partition, extent)))
}

/// The `.log` files of a partition directory by base offset, noting leftovers of interrupted
/// operations and checking the other files: indexes have their `.log`, snapshots decode.
fn segment_logs(dir: &Path, totals: &mut Totals) -> anyhow::Result<Vec<(i64, PathBuf)>> {
    let files = sorted_files(dir)?;
    let mut logs: Vec<(i64, PathBuf)> = Vec::new();
    for path in &files {
        let name = file_name(path);
        if let Some((suffix, what)) = LEFTOVER_SUFFIXES
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
        {
            totals.note(
                path,
                format!("a {suffix} file ({what}); startup settles it"),
            );
            continue;
        }
        let Some(base) = parse_base_offset(&name) else {
            continue;
        };
        if name.ends_with(LOG_SUFFIX) {
            logs.push((base, path.clone()));
        } else if (name.ends_with(INDEX_SUFFIX)
            || name.ends_with(TIME_INDEX_SUFFIX)
            || name.ends_with(TXN_INDEX_SUFFIX))
            && !name
                .get(..20)
                .is_some_and(|base| path.with_file_name(format!("{base}{LOG_SUFFIX}")).exists())
        {
            totals.problem(path, "an index without its .log");
        } else if name.ends_with(SNAPSHOT_SUFFIX) {
            match std::fs::read(path) {
                Ok(bytes) => {
                    if let Err(error) = snapshot::decode(path, &bytes) {
                        totals.problems.push(error.to_string());
                    }
                }
                Err(error) => totals.problem(path, error),
            }
        }
    }
    Ok(logs)
}

/// Reports what ends a segment's data early: a note for a crash's torn last write, which
/// startup recovery cuts, and a problem anywhere else.
fn report_tail(
    totals: &mut Totals,
    log: &Path,
    tail: &check::Tail,
    last_segment: bool,
    stopped_cleanly: bool,
) {
    match tail {
        // A crash's torn last write (a batch cut short, or a file extended with zeros
        // the data never reached): startup recovery cuts it, and nothing acknowledged
        // and readable is lost by that. Anywhere else, or after a clean stop (which
        // skips recovery, so appends would go after the bytes), it is damage.
        check::Tail::Zeros { .. } | check::Tail::Cut { .. } if last_segment && !stopped_cleanly => {
            totals.note(
                log,
                format!(
                    "{} (a write torn by an unclean stop; startup recovery cuts it)",
                    tail.describe()
                ),
            );
        }
        check::Tail::Zeros { .. } | check::Tail::Cut { .. } | check::Tail::Damaged { .. } => {
            totals.problem(log, tail.describe());
        }
    }
}

/// Checks the offset and time indexes beside `log`, where they exist.
fn check_indexes_of(log: &Path, totals: &mut Totals) {
    for (suffix, check) in [
        (INDEX_SUFFIX, IndexKind::Offset),
        (TIME_INDEX_SUFFIX, IndexKind::Time),
    ] {
        let path = PathBuf::from(format!(
            "{}{suffix}",
            log.to_string_lossy()
                .strip_suffix(LOG_SUFFIX)
                .unwrap_or_default()
        ));
        if !path.exists() {
            continue;
        }
        let checked = match check {
            IndexKind::Offset => check::offset_index(&path).map(|c| c.problems),
            IndexKind::Time => check::time_index(&path).map(|c| c.problems),
        };
        let problems = checked.unwrap_or_else(|error| vec![format!("{error:#}")]);
        totals.file_problems(&path, problems);
    }
}

#[derive(Debug, Clone, Copy)]
enum IndexKind {
    Offset,
    Time,
}

/// Leftover files and the checkpoints of one data directory, against the logs found in it.
fn verify_top_level(
    dir: &Path,
    extents: &BTreeMap<TopicPartition, LogExtent>,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    for path in sorted_files(dir)? {
        let name = file_name(&path);
        if path.is_file() && name.ends_with(".tmp") {
            totals.note(
                &path,
                "a .tmp file (an interrupted checkpoint or config write); startup removes it",
            );
        }
    }
    // (file, what the offsets mean, may they equal the log end, may they lie below the log start)
    let checkpoints = [
        (RECOVERY_POINT_CHECKPOINT, "recovery point"),
        (LOG_START_OFFSET_CHECKPOINT, "log start offset"),
        (CLEANER_OFFSET_CHECKPOINT, "cleaner offset"),
        (REPLICATION_OFFSET_CHECKPOINT, "high watermark"),
    ];
    for (name, meaning) in checkpoints {
        let path = dir.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                totals.problem(&path, format!("cannot be read as a checkpoint: {error}"));
                continue;
            }
        };
        if text.is_empty() {
            continue; // Kafka leaves some checkpoints empty until first written.
        }
        let entries = match parse_offset_checkpoint(&text, &path) {
            Ok(entries) => entries,
            Err(error) => {
                totals.problems.push(error.to_string());
                continue;
            }
        };
        for (topic_partition, offset) in entries {
            let Some(extent) = extents.get(&topic_partition) else {
                // Kafka skips such entries too (the partition may have moved or been deleted).
                totals.notes.push(format!(
                    "{}: {topic_partition} is not in this directory",
                    path.display()
                ));
                continue;
            };
            if offset > extent.end_offset {
                totals.problem(
                    &path,
                    format!(
                        "{topic_partition}: {meaning} {offset} is beyond the log end offset {}",
                        extent.end_offset
                    ),
                );
            }
            if name == LOG_START_OFFSET_CHECKPOINT && offset < extent.first_base {
                totals.problem(
                    &path,
                    format!(
                        "{topic_partition}: log start offset {offset} is below the first segment's base {}",
                        extent.first_base
                    ),
                );
            }
        }
    }
    Ok(())
}

/// Prints progress to stderr at most every two seconds.
struct Progress {
    started: Instant,
    last: Instant,
}

impl Progress {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            last: now,
        }
    }

    fn tick(&mut self, totals: &Totals) {
        if self.last.elapsed() < Duration::from_secs(2) {
            return;
        }
        self.last = Instant::now();
        let seconds = self.started.elapsed().as_secs_f64();
        eprintln!(
            "verified {} of {} segments ({:.0} MiB, {:.0} MiB/s)",
            totals.segments,
            totals.segments_to_check,
            totals.bytes as f64 / (1u64 << 20) as f64,
            totals.bytes as f64 / (1u64 << 20) as f64 / seconds.max(0.001)
        );
    }
}
