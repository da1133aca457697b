//! Loading every partition log of the data directories at startup: all directories at once,
//! `num.recovery.threads.per.data.dir` threads each, with progress figures per directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::data_dir::DataDir;
use super::dirs::DataDirs;
use crate::checkpoint::{LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT};
use crate::clock::Clock;
use crate::config::LogConfig;
use crate::error::{Result, StorageError};
use crate::fs::remove_if_exists;
use crate::log::{LoadParams, Log, LogEnvironment, SegmentReaper};
use crate::offset::Offset;
use crate::segment::TMP_SUFFIX;
use crate::types::{PartitionDirKind, TopicPartition, dir_unique_id, parse_partition_dir};

/// Sub-directories of a data directory that hold no partition log ferrolog manages.
const SKIPPED_DIRS: &[&str] = &["__cluster_metadata-0", "remote-log-index-cache"];
/// How often a directory still loading logs its progress.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(10);

/// A log loaded from directory number `dir_index`.
pub(crate) struct LoadedLog {
    pub topic_partition: TopicPartition,
    pub dir_index: usize,
    pub log: Arc<Log>,
    pub report: crate::log::LoadReport,
    /// For a future log (a `-future` directory), the unique id of its name.
    pub future_id: Option<String>,
}

/// Every log loaded, and the `-delete` directories found (the current log's directory takes
/// its future log's unique id at a swap: see `moves.rs`). Those are removed only once the
/// future logs are settled ([`remove_deleted`]): one may be what shows that a lone future log
/// is the complete copy of an interrupted swap.
pub(crate) struct Loaded {
    pub logs: Vec<LoadedLog>,
    pub deleted: Vec<DeletedDir>,
}

/// A partition directory queued for deletion (`-delete`) found at startup.
pub(crate) struct DeletedDir {
    pub dir_index: usize,
    pub path: PathBuf,
    pub unique_id: Option<String>,
}

/// What the directories' loading threads gather.
#[derive(Default)]
struct Found {
    logs: Mutex<Vec<LoadedLog>>,
    deleted: Mutex<Vec<DeletedDir>>,
}

/// What loading one directory found: partition directories, each with its future log's
/// unique id if it is one.
struct DirJobs {
    logs: Vec<(TopicPartition, PathBuf, Option<String>)>,
    deleted: Vec<DeletedDir>,
}

/// Lists the partition directories of `dir` and its `-delete` directories, removing leftover
/// temporary files, and failing on a sub-directory that is not a partition directory.
fn list_jobs(dir_index: usize, dir: &DataDir) -> Result<DirJobs> {
    let path = dir.path();
    let mut logs = Vec::new();
    let mut deleted = Vec::new();
    let entries = std::fs::read_dir(path).map_err(StorageError::io("list data directory", path))?;
    for entry in entries {
        let entry = entry.map_err(StorageError::io("list data directory", path))?;
        let entry_path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let file_type = entry
            .file_type()
            .map_err(StorageError::io("stat", &entry_path))?;
        if !file_type.is_dir() {
            if name.ends_with(TMP_SUFFIX) {
                remove_if_exists(&entry_path)?;
                tracing::info!(path = %entry_path.display(), "removed a leftover temporary file");
            }
            continue;
        }
        if SKIPPED_DIRS.contains(&name.as_str()) {
            tracing::info!(path = %entry_path.display(), "skipped: not a partition log ferrolog manages");
            continue;
        }
        let (topic_partition, kind) = parse_partition_dir(&entry_path).map_err(|error| {
            StorageError::Fatal(format!(
                "{error}; move it out of the data directory {} or delete it",
                path.display()
            ))
        })?;
        match kind {
            PartitionDirKind::Live => logs.push((topic_partition, entry_path, None)),
            PartitionDirKind::Future => {
                let unique_id = dir_unique_id(&name).unwrap_or_default().to_owned();
                logs.push((topic_partition, entry_path, Some(unique_id)));
            }
            PartitionDirKind::Delete => deleted.push(DeletedDir {
                dir_index,
                unique_id: dir_unique_id(&name).map(str::to_owned),
                path: entry_path,
            }),
            PartitionDirKind::Stray => {
                tracing::warn!(
                    path = %entry_path.display(),
                    "left alone: stray replicas belong to a cluster's other brokers"
                );
            }
        }
    }
    logs.sort();
    Ok(DirJobs { logs, deleted })
}

/// Removes the `-delete` directories loading found, once the future logs are settled. While
/// any data directory is offline (failed at startup or since) they are kept: one may be the
/// only complete copy of a partition whose swap was under way, its future log in the directory
/// that is offline now.
pub(crate) fn remove_deleted(deleted: Vec<DeletedDir>, dirs: &DataDirs) {
    for dir in deleted {
        if dirs.offline_count() > 0 {
            tracing::warn!(path = %dir.path.display(), "kept a partition directory queued for deletion while a data directory is offline");
            continue;
        }
        match std::fs::remove_dir_all(&dir.path) {
            Ok(()) => {
                tracing::info!(path = %dir.path.display(), "removed a partition directory queued for deletion");
            }
            Err(error) => {
                // Its data directory goes offline, as for any other I/O failure at startup.
                let error = StorageError::io("delete", &dir.path)(error);
                dirs.all()[dir.dir_index].health().mark_offline(&error);
            }
        }
    }
}

/// What every log of the manager is given, besides its data directory's health.
#[derive(Debug, Clone)]
pub(crate) struct LogServices {
    pub clock: Arc<dyn Clock>,
    pub reaper: Arc<dyn SegmentReaper>,
    pub open_files: Arc<crate::segment::OpenFiles>,
    pub decompression: Arc<crate::decompression::DecompressionMemory>,
    /// Whether the logs loaded are salvaged (`ManagerConfig::salvage`).
    pub salvage: crate::log::Salvage,
}

impl LogServices {
    /// The environment of a log in `dir`.
    pub fn environment_in(&self, dir: &DataDir) -> LogEnvironment {
        LogEnvironment {
            clock: Arc::clone(&self.clock),
            health: Arc::clone(dir.health()),
            reaper: Some(Arc::clone(&self.reaper)),
            open_files: Arc::clone(&self.open_files),
            decompression: Arc::clone(&self.decompression),
        }
    }
}

/// Loads every log of every online directory. An I/O failure takes only its directory
/// offline; anything else (a corrupt name, a log that cannot be opened safely) is fatal.
pub(crate) fn load_all(
    dirs: &[Arc<DataDir>],
    threads_per_dir: usize,
    services: &LogServices,
    config_for: &(dyn Fn(&str) -> LogConfig + Sync),
) -> Result<Loaded> {
    let found = Found::default();
    let fatal: Mutex<Option<StorageError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for (dir_index, dir) in dirs.iter().enumerate() {
            if dir.is_offline() {
                continue;
            }
            let (found, fatal) = (&found, &fatal);
            scope.spawn(move || {
                if let Err(error) =
                    load_dir(dir_index, dir, threads_per_dir, services, config_for, found)
                {
                    if error.is_storage_failure() {
                        dir.health().mark_offline(&error);
                    } else {
                        fatal.lock().get_or_insert(error);
                    }
                }
            });
        }
    });
    if let Some(error) = fatal.into_inner() {
        return Err(error);
    }
    Ok(Loaded {
        logs: found.logs.into_inner(),
        deleted: found.deleted.into_inner(),
    })
}

fn load_dir(
    dir_index: usize,
    dir: &DataDir,
    threads: usize,
    services: &LogServices,
    config_for: &(dyn Fn(&str) -> LogConfig + Sync),
    found: &Found,
) -> Result<()> {
    let started = Instant::now();
    let DirJobs {
        logs: jobs,
        deleted,
    } = list_jobs(dir_index, dir)?;
    found.deleted.lock().extend(deleted);
    let recovery_points = dir.read_checkpoint_or_empty(RECOVERY_POINT_CHECKPOINT);
    let log_starts = dir.read_checkpoint_or_empty(LOG_START_OFFSET_CHECKPOINT);
    let total = jobs.len();
    dir.progress.remaining_logs.store(total, Ordering::Relaxed);
    publish_progress(dir, total);
    tracing::info!(
        dir = %dir.path().display(),
        logs = total,
        clean_shutdown = dir.had_clean_shutdown(),
        "loading logs"
    );
    let next_job = AtomicUsize::new(0);
    let failure: Mutex<Option<StorageError>> = Mutex::new(None);
    let last_report = Mutex::new(Instant::now());
    std::thread::scope(|scope| {
        for thread in 0..threads.max(1).min(total.max(1)) {
            let name = format!("recovery-{}-{thread}", dir.path().display());
            let (jobs, next_job, failure, last_report) = (&jobs, &next_job, &failure, &last_report);
            let (recovery_points, log_starts) = (&recovery_points, &log_starts);
            let spawned = std::thread::Builder::new()
                .name(name)
                .spawn_scoped(scope, move || {
                    loop {
                        if failure.lock().is_some() {
                            return;
                        }
                        let job = next_job.fetch_add(1, Ordering::Relaxed);
                        let Some((topic_partition, path, future_id)) = jobs.get(job) else {
                            return;
                        };
                        let params = LoadParams {
                            recovery_point: Offset::new(
                                recovery_points.get(topic_partition).copied().unwrap_or(0),
                            ),
                            log_start_offset: Offset::new(
                                log_starts.get(topic_partition).copied().unwrap_or(0),
                            ),
                            had_clean_shutdown: dir.had_clean_shutdown(),
                            salvage: services.salvage,
                        };
                        match load_one(
                            path,
                            config_for(&topic_partition.topic),
                            params,
                            services,
                            dir,
                        ) {
                            Ok((log, report)) => found.logs.lock().push(LoadedLog {
                                topic_partition: topic_partition.clone(),
                                dir_index,
                                log: Arc::new(log),
                                report,
                                future_id: future_id.clone(),
                            }),
                            Err(error) => {
                                failure.lock().get_or_insert(error);
                                return;
                            }
                        }
                        count_one_loaded(dir, last_report);
                    }
                });
            if let Err(error) = spawned {
                failure.lock().get_or_insert(StorageError::Fatal(format!(
                    "cannot start a recovery thread: {error}"
                )));
            }
        }
    });
    if let Some(error) = failure.into_inner() {
        // The directory goes offline and its loading stops: nothing is left to recover there,
        // so its progress figures drop to zero instead of staying where the failure left them.
        dir.progress.remaining_logs.store(0, Ordering::Relaxed);
        dir.progress.remaining_segments.store(0, Ordering::Relaxed);
        publish_progress(dir, 0);
        return Err(error);
    }
    tracing::info!(
        dir = %dir.path().display(),
        logs = total,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "loaded logs"
    );
    Ok(())
}

/// Counts one more log loaded in `dir`, and logs the progress at most every
/// `PROGRESS_INTERVAL` (`last_report` is when it last did).
fn count_one_loaded(dir: &DataDir, last_report: &Mutex<Instant>) {
    let remaining = dir.progress.remaining_logs.fetch_sub(1, Ordering::Relaxed) - 1;
    publish_progress(dir, remaining);
    let mut last = last_report.lock();
    if last.elapsed() >= PROGRESS_INTERVAL {
        *last = Instant::now();
        tracing::info!(
            dir = %dir.path().display(),
            remaining_logs = remaining,
            remaining_segments = dir.remaining_segments_to_recover(),
            "still loading"
        );
    }
}

/// Kafka's `remainingLogsToRecover` and `remainingSegmentsToRecover` for one directory, for a
/// metrics endpoint that is already up while the logs load.
fn publish_progress(dir: &DataDir, remaining_logs: usize) {
    let path = dir.path().display().to_string();
    metrics::gauge!("kafka_log_logmanager_remaininglogstorecover", "dir" => path.clone())
        .set(remaining_logs as f64);
    metrics::gauge!("kafka_log_logmanager_remainingsegmentstorecover", "dir" => path)
        .set(dir.remaining_segments_to_recover() as f64);
}

fn load_one(
    path: &Path,
    config: LogConfig,
    params: LoadParams,
    services: &LogServices,
    dir: &DataDir,
) -> Result<(Log, crate::log::LoadReport)> {
    let (log, report) = Log::open_in(
        path,
        config,
        params,
        services.environment_in(dir),
        Some(&dir.progress.remaining_segments),
    )
    .map_err(|error| match error {
        storage @ StorageError::Io { .. } => storage,
        other => StorageError::Fatal(format!(
            "cannot load the log in {}: {other}",
            path.display()
        )),
    })?;
    if report.truncated_bytes() > 0 || !report.removed_segments.is_empty() {
        tracing::warn!(
            log = %path.display(),
            truncated_bytes = report.truncated_bytes(),
            removed_segments = report.removed_segments.len(),
            "recovery cut damaged data"
        );
    }
    Ok((log, report))
}

/// Refuses a partition with two current logs, or two future logs, as Kafka does: which one
/// holds its data is not known.
pub(crate) fn find_duplicates(loaded: &[LoadedLog], dirs: &[Arc<DataDir>]) -> Result<()> {
    let mut seen: HashMap<(&TopicPartition, bool), usize> = HashMap::new();
    for log in loaded {
        let future = log.future_id.is_some();
        if let Some(other) = seen.insert((&log.topic_partition, future), log.dir_index) {
            return Err(StorageError::Fatal(format!(
                "partition {} has {} in two data directories: {} and {}; move the one that does not hold its data out of the data directory",
                log.topic_partition,
                if future { "a future log" } else { "a log" },
                dirs[other].path().display(),
                dirs[log.dir_index].path().display()
            )));
        }
    }
    Ok(())
}
