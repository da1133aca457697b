//! The LogManager: every partition log across the data directories of `log.dirs`.
//!
//! It validates, creates and locks each directory, loads and recovers every log in parallel at
//! startup (skipping recovery after a clean shutdown), places each new partition in a
//! directory, keeps the recovery-point and log-start-offset checkpoints, takes a failing
//! directory offline while the others serve, and shuts down cleanly.
//!
//! Threads: any thread may call it. The map of logs sits behind a read-write lock taken only to
//! find, add or remove a log; work on a log goes through the [`Log`] itself.

mod checkpoints;
mod cleaner_config;
mod cleaning;
mod config;
mod data_dir;
mod deleter;
mod dirs;
mod document_generations;
mod document_table;
mod documents;
mod load;
mod log_map;
mod meta_properties;
mod moves;
mod partitions;
mod producer_ids;
mod properties;
mod salvage;
mod scrub_config;
mod scrubber;
mod tasks;
mod topic_configs;
mod topic_defaults;
mod topic_ids;
mod topic_overrides;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Mutex, RwLock};

pub use cleaner_config::cleaner_config_from;
pub use config::{BackgroundConfig, ManagerConfig, PlacementPolicy, known_keys, parse_log_dirs};
pub use data_dir::{CLEAN_SHUTDOWN_FILE, DataDir, LOCK_FILE};
pub use deleter::Deleter;
pub use dirs::DataDirs;
pub use document_generations::GENERATIONS_FILE;
pub use document_table::{Table, parse_table, render_table};
pub use documents::{Document, Documents};
pub use meta_properties::{META_PROPERTIES, MetaProperties, random_uuid};
pub use moves::{COPY_CHUNK_BYTES, FutureLog, LogDirChange, Moves, SWAP_TAIL_BYTES};
pub use producer_ids::PRODUCER_IDS_FILE;
pub use properties::parse_properties;
pub use scrub_config::ScrubConfig;
pub use scrubber::{PASS_STARTED_TOPIC, SCRUB_CHECKPOINT, Scrubber};
pub use tasks::Jobs;
use topic_configs::StoredTopicConfigs;
pub use topic_configs::TOPIC_CONFIGS_FILE;
pub use topic_defaults::{broker_synonyms, sets_topic_default, topic_defaults_from};
pub use topic_ids::{PARTITION_METADATA_FILE, TopicId, read as read_topic_id};
pub use topic_overrides::TopicConfigs;
use topic_overrides::{effective_config, newest_topic_configs};

use crate::clock::Clock;
use crate::error::{Result, StorageError};
use crate::log::{Log, SegmentReaper};
use crate::types::TopicPartition;

use load::LogServices;
use log_map::{Entry, LogMap};
use meta_properties::Identity;
use tasks::Maintenance;

/// What startup found, for operators and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartupReport {
    /// Partition logs loaded from the online directories.
    pub logs_loaded: usize,
    /// Segments scanned and re-indexed (0 after a clean shutdown).
    pub segments_recovered: usize,
    /// Directories that could not be used at startup.
    pub offline_dirs: Vec<PathBuf>,
    /// The logs whose loading changed something on disk (data cut by recovery, segments or
    /// leftover files removed, swaps completed) or met damaged bytes it left in place.
    pub changed: Vec<(TopicPartition, crate::log::LoadReport)>,
    /// Partitions whose move to another directory was interrupted in its swap and finished by
    /// loading.
    pub moves_completed: Vec<TopicPartition>,
    /// Partitions whose move to another directory goes on from where it stopped.
    pub moves_resumed: Vec<TopicPartition>,
}

/// Every partition log of the node, across its data directories. Each part of its state has
/// one owner: the directories ([`DataDirs`]), the logs and topic ids (`log_map.rs`),
/// the node's identity, the topic overrides, the producer-id block, and what runs beside the
/// logs (`tasks.rs`: deleter, scheduler, cleaner and its checkpoints).
///
/// Its methods are what a user reaches first (open, find, create and delete logs, the data
/// directories, shutdown); each cohesive family of operations is behind a handle borrowed
/// from it: [`LogManager::documents`], [`LogManager::topic_configs`], [`LogManager::moves`]
/// and [`LogManager::jobs`].
#[derive(Debug)]
pub struct LogManager {
    config: ManagerConfig,
    clock: Arc<dyn Clock>,
    dirs: DataDirs,
    logs: RwLock<LogMap>,
    /// Topic-level overrides and the generation of their file (see `topic_configs`); the write
    /// lock is held while the file is rewritten so copies never go out of order.
    topic_overrides: RwLock<StoredTopicConfigs>,
    /// The broker-level defaults of every topic in force: `config.log_defaults` until the
    /// broker's dynamic configs change them ([`TopicConfigs::set_defaults`]).
    log_defaults: RwLock<crate::config::LogConfig>,
    producer_ids: Mutex<producer_ids::ProducerIdBlock>,
    /// Serializes creations and deletions so two callers never create the same log twice.
    create_lock: Mutex<()>,
    shut_down: AtomicBool,
    identity: Identity,
    startup: StartupReport,
    maintenance: Maintenance,
    /// The sealed segments' files open now, across every log (`ferrolog.max.open.sealed.segments`).
    open_files: Arc<crate::segment::OpenFiles>,
    /// What appends decompress produced batches into (`ferrolog.decompression.memory.bytes`).
    decompression: Arc<crate::decompression::DecompressionMemory>,
}

impl LogManager {
    /// Opens every data directory and loads every log in them.
    pub fn open(config: ManagerConfig, clock: Arc<dyn Clock>) -> Result<Self> {
        let dirs = DataDirs::open(&config.log_dirs)?;
        let identity =
            meta_properties::settle_identity(dirs.all(), config.node_id, clock.now_ms())?;

        let stored_configs = newest_topic_configs(dirs.all())?;
        let defaults = config.log_defaults.clone();
        let config_for = {
            let overrides = stored_configs.overrides.clone();
            move |topic: &str| effective_config(&defaults, overrides.get(topic))
        };
        let deleter = Arc::new(Deleter::new(Arc::clone(&clock)));
        let open_files = crate::segment::OpenFiles::new(config.max_open_sealed_segments);
        let decompression =
            crate::decompression::DecompressionMemory::new(config.decompression_memory_bytes);
        let services = LogServices {
            clock: Arc::clone(&clock),
            reaper: Arc::clone(&deleter) as Arc<dyn SegmentReaper>,
            open_files: Arc::clone(&open_files),
            decompression: Arc::clone(&decompression),
            salvage: config.salvage,
        };
        let loaded = load::load_all(
            dirs.all(),
            config.recovery_threads_per_data_dir,
            &services,
            &config_for,
        )?;
        load::find_duplicates(&loaded.logs, dirs.all())?;
        let mut settled = moves::settle_futures(loaded, &dirs)?;
        let deleted = std::mem::take(&mut settled.deleted);
        let (mut logs, mut startup) = index_settled_logs(settled, &dirs);
        topic_ids::settle(&mut logs);
        let first_producer_id = first_free_producer_id(&dirs, &logs)?;
        // Only once the future logs are settled: a `-delete` directory is what made a lone
        // future log its partition's log. A removal that fails takes its directory offline.
        load::remove_deleted(deleted, &dirs);
        for dir in &dirs {
            if dir.is_offline() {
                startup.offline_dirs.push(dir.path().to_path_buf());
            } else {
                dir.mark_loaded();
            }
        }
        let maintenance = Maintenance::new(deleter, &config);
        let manager = Self {
            producer_ids: producer_ids::ProducerIdBlock::starting_at(first_producer_id),
            log_defaults: RwLock::new(config.log_defaults.clone()),
            config,
            clock,
            dirs,
            logs: RwLock::new(logs),
            topic_overrides: RwLock::new(stored_configs),
            create_lock: Mutex::new(()),
            shut_down: AtomicBool::new(false),
            identity,
            startup,
            maintenance,
            open_files,
            decompression,
        };
        manager.dirs.ensure_some_online()?;
        manager.load_cleaner_checkpoints();
        let now = manager.clock.now_ms();
        manager.maintenance.scrubber.load(&manager, now);
        Ok(manager)
    }

    /// The configuration the manager was opened with (the topics' defaults in force are
    /// [`TopicConfigs::defaults`]).
    pub fn config(&self) -> &ManagerConfig {
        &self.config
    }
    /// The cluster id of the directories' `meta.properties` (drawn at random for fresh ones).
    pub fn cluster_id(&self) -> &str {
        &self.identity.cluster_id
    }
    /// What each of this manager's logs is given besides its directory's health.
    fn log_services(&self) -> LogServices {
        LogServices {
            clock: Arc::clone(&self.clock),
            reaper: Arc::clone(&self.maintenance.deleter) as Arc<dyn SegmentReaper>,
            open_files: Arc::clone(&self.open_files),
            decompression: Arc::clone(&self.decompression),
            salvage: crate::log::Salvage::Off,
        }
    }

    /// The sealed segments' files open now, within `ferrolog.max.open.sealed.segments`.
    pub fn open_files(&self) -> &Arc<crate::segment::OpenFiles> {
        &self.open_files
    }

    /// The clock every log of this manager uses.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
    /// This node's id: `node.id` if set, else the directories' `meta.properties`, else 0.
    pub fn node_id(&self) -> i32 {
        self.identity.node_id
    }
    /// What loading found when the manager opened.
    pub fn startup_report(&self) -> &StartupReport {
        &self.startup
    }
    /// The directories that opened at startup, in `log.dirs` order.
    pub fn data_dirs(&self) -> &[Arc<DataDir>] {
        self.dirs.all()
    }
    /// Directories offline now (failed at startup or since).
    pub fn offline_dir_count(&self) -> usize {
        self.dirs.offline_count()
    }
    /// True once every directory is offline: nothing can be served any more.
    pub fn is_halted(&self) -> bool {
        self.dirs.is_halted()
    }

    fn ensure_running(&self) -> Result<()> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(StorageError::Fatal("the log manager is shut down".into()));
        }
        self.dirs.ensure_some_online()
    }

    /// The log of `topic_partition`, if this node has it.
    pub fn get(&self, topic_partition: &TopicPartition) -> Option<Arc<Log>> {
        self.logs
            .read()
            .get(topic_partition)
            .map(|entry| Arc::clone(&entry.log))
    }

    /// The data directory holding `topic_partition`'s log.
    pub fn dir_of(&self, topic_partition: &TopicPartition) -> Option<&Arc<DataDir>> {
        let index = self.logs.read().get(topic_partition)?.dir_index;
        self.dirs.get(index)
    }

    /// `topic`'s id (every topic that has a partition here has one).
    pub fn topic_id(&self, topic: &str) -> Option<TopicId> {
        self.logs.read().topic_id(topic)
    }

    /// The topic whose id is `id`.
    pub fn topic_with_id(&self, id: TopicId) -> Option<String> {
        self.logs.read().topic_with_id(id)
    }

    /// The partitions `topic` has on this node, in order.
    pub fn partitions_of(&self, topic: &str) -> Vec<i32> {
        self.logs.read().partitions_of(topic)
    }

    /// Every topic with its partitions, by name.
    pub fn topics(&self) -> Vec<(String, Vec<i32>)> {
        self.logs.read().topics()
    }

    /// How many partition logs this node holds.
    pub fn partition_count(&self) -> usize {
        self.logs.read().len()
    }

    /// Fails when creating `requested` more partitions would pass `ferrolog.max.partitions`.
    pub fn check_room_for(&self, requested: usize) -> Result<()> {
        let held = self.partition_count();
        if held.saturating_add(requested) > self.config.max_partitions {
            return Err(StorageError::PartitionLimit {
                held,
                requested,
                limit: self.config.max_partitions,
            });
        }
        Ok(())
    }

    /// Every log with its partition, sorted by partition.
    pub fn logs(&self) -> Vec<(TopicPartition, Arc<Log>)> {
        let mut all: Vec<_> = self
            .logs
            .read()
            .iter()
            .map(|(topic_partition, entry)| (topic_partition.clone(), Arc::clone(&entry.log)))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The current logs of directory `dir_index`.
    fn logs_in(&self, dir_index: usize) -> Vec<(TopicPartition, Arc<Log>)> {
        self.logs
            .read()
            .iter()
            .filter(|(_, entry)| entry.dir_index == dir_index)
            .map(|(topic_partition, entry)| (topic_partition.clone(), Arc::clone(&entry.log)))
            .collect()
    }

    /// Every log whose files are in directory `dir_index`: its current logs and the future
    /// logs moving there (both have checkpoint entries there, as in Kafka).
    fn all_logs_in(&self, dir_index: usize) -> Vec<(TopicPartition, Arc<Log>)> {
        let mut logs = self.logs_in(dir_index);
        logs.extend(
            self.logs
                .read()
                .futures
                .iter()
                .filter(|(_, future)| future.dir_index == dir_index)
                .map(|(topic_partition, future)| {
                    (topic_partition.clone(), Arc::clone(&future.log))
                }),
        );
        logs
    }

    /// The node's documents: named files kept in every data directory (the topic configs, the
    /// ACLs).
    pub fn documents(&self) -> Documents<'_> {
        Documents { manager: self }
    }

    /// Topic-level configuration: overrides, effective configs, and changing them.
    pub fn topic_configs(&self) -> TopicConfigs<'_> {
        TopicConfigs { manager: self }
    }

    /// The scrubber, to read or change its rate.
    pub fn scrubber(&self) -> &Scrubber {
        &self.maintenance.scrubber
    }

    /// Moving partitions between data directories.
    pub fn moves(&self) -> Moves<'_> {
        Moves { manager: self }
    }

    /// The periodic jobs and checkpoints, to run one pass by hand.
    pub fn jobs(&self) -> Jobs<'_> {
        Jobs { manager: self }
    }

    /// The deleter removing deleted segments and partitions after their delay.
    pub fn deleter(&self) -> &Arc<Deleter> {
        &self.maintenance.deleter
    }

    /// Flushes and closes every log, writes every checkpoint, writes the clean-shutdown marker in
    /// each directory whose logs all closed and which was fully loaded, and releases the locks.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        tracing::info!("shutting down the log manager");
        self.maintenance.stop();
        let threads = self.config.recovery_threads_per_data_dir.max(1);
        let mut first_error = None;
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..self.dirs.len())
                .map(|index| scope.spawn(move || self.shutdown_dir(index, threads)))
                .collect();
            for handle in handles {
                match handle.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => {
                        first_error.get_or_insert(error);
                    }
                    Err(_) => {
                        first_error.get_or_insert(StorageError::Fatal(
                            "a shutdown thread panicked".into(),
                        ));
                    }
                }
            }
        });
        if let Err(error) = self.dirs.release_locks() {
            first_error.get_or_insert(error);
        }
        first_error.map_or(Ok(()), Err)
    }

    fn shutdown_dir(&self, dir_index: usize, threads: usize) -> Result<()> {
        let dir = &self.dirs[dir_index];
        if dir.is_offline() {
            return Ok(());
        }
        let logs = self.all_logs_in(dir_index);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let failures = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..threads.min(logs.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some((topic_partition, log)) = logs.get(index) else {
                            return;
                        };
                        if let Err(error) = log.close() {
                            tracing::error!(partition = %topic_partition, error = %error, "log did not close cleanly");
                            failures.lock().push(error);
                        }
                    }
                });
            }
        });
        if let Some(error) = failures.into_inner().into_iter().next() {
            return Err(error);
        }
        self.checkpoint_dir(dir_index)?;
        if dir.had_clean_shutdown() || dir.is_loaded() {
            dir.write_clean_shutdown_marker()?;
        }
        Ok(())
    }
}

/// The map of the logs loading settled (future logs included), and what startup found.
fn index_settled_logs(settled: moves::Settled, dirs: &DataDirs) -> (LogMap, StartupReport) {
    let mut startup = StartupReport {
        logs_loaded: settled.current.len(),
        offline_dirs: dirs.failed_at_start().to_vec(),
        moves_completed: settled.completed,
        moves_resumed: settled
            .future
            .iter()
            .map(|log| log.topic_partition.clone())
            .collect(),
        ..StartupReport::default()
    };
    let mut logs = LogMap::with_capacity(settled.current.len());
    for future in settled.future {
        logs.futures.insert(
            future.topic_partition,
            log_map::FutureEntry {
                log: future.log,
                dir_index: future.dir_index,
                unique_id: future.future_id.unwrap_or_default(),
            },
        );
    }
    for loaded_log in settled.current {
        startup.segments_recovered += loaded_log.report.recovered.len();
        let report = &loaded_log.report;
        loaded_log.log.warn_possibly_unended(&report.salvaged);
        if report.truncated_bytes() > 0
            || !report.removed_segments.is_empty()
            || !report.removed_files.is_empty()
            || !report.completed_swaps.is_empty()
            || !report.damaged.is_empty()
            || !report.salvaged.is_empty()
        {
            startup
                .changed
                .push((loaded_log.topic_partition.clone(), report.clone()));
        }
        logs.insert(
            loaded_log.topic_partition,
            Entry {
                log: loaded_log.log,
                dir_index: loaded_log.dir_index,
            },
        );
    }
    (logs, startup)
}

/// Producer ids start above every reserved block and every id the logs still hold.
fn first_free_producer_id(dirs: &DataDirs, logs: &LogMap) -> Result<i64> {
    let mut first_producer_id = 0i64;
    for dir in dirs.iter().filter(|dir| !dir.is_offline()) {
        if let Some(next) = producer_ids::read(dir.path())? {
            first_producer_id = first_producer_id.max(next);
        }
    }
    for entry in logs.values() {
        if let Some(highest) = entry.log.active_producer_ids().into_iter().max() {
            first_producer_id = first_producer_id.max(highest.saturating_add(1));
        }
    }
    Ok(first_producer_id)
}

#[cfg(test)]
mod tests;
