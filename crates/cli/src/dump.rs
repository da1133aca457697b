//! `ferrolog dump-log`: prints segment files the way Kafka's `kafka-dump-log.sh` does, and
//! checks indexes against the `.log` beside them. Damaged input is reported with its byte
//! position; the dump goes on with the next file.

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use ferrolog_records::control::{ControlType, marker_coordinator_epoch};
use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, FileEntry, Record};
use ferrolog_storage::segment::{
    EntrySummary, INDEX_SUFFIX, LOG_SUFFIX, RecordsFile, ScanEnd, TIME_INDEX_SUFFIX,
    parse_base_offset,
};

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Files to dump (.log, .index, .timeindex).
    #[arg(long, num_args = 1.., required = true, value_delimiter = ',')]
    files: Vec<PathBuf>,
    /// Print each record's key, value and headers, not only the batch headers.
    #[arg(long)]
    print_data_log: bool,
}

/// Dumps every file; returns false when any file had a problem.
pub fn run(args: &DumpArgs) -> anyhow::Result<bool> {
    let mut all_good = true;
    for file in &args.files {
        println!("Dumping {}", file.display());
        let name = file
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        let outcome = if name.ends_with(LOG_SUFFIX) {
            dump_log(file, args.print_data_log)
        } else if name.ends_with(INDEX_SUFFIX) {
            dump_offset_index(file)
        } else if name.ends_with(TIME_INDEX_SUFFIX) {
            dump_time_index(file)
        } else {
            Err(anyhow::anyhow!(
                "unknown file type; expected .log, .index or .timeindex"
            ))
        };
        match outcome {
            Ok(true) => {}
            Ok(false) => all_good = false,
            Err(error) => {
                println!("error: {}: {error:#}", file.display());
                all_good = false;
            }
        }
    }
    Ok(all_good)
}

fn base_offset_of(path: &Path) -> anyhow::Result<i64> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default();
    parse_base_offset(name)
        .with_context(|| format!("{} does not start with a base offset", path.display()))
}

fn open_records(path: &Path) -> anyhow::Result<RecordsFile> {
    if !path.is_file() {
        bail!("no such file");
    }
    Ok(RecordsFile::open(path, None)?)
}

fn dump_log(path: &Path, print_data: bool) -> anyhow::Result<bool> {
    let base = base_offset_of(path)?;
    println!("Log starting offset: {base}");
    let file = open_records(path)?;
    let end = file.size();
    let mut problems = 0usize;
    let scan = file.scan(0, end, |position, entry| {
        let valid = entry.validate();
        println!("{}", batch_line(position, entry, valid.is_ok()));
        if let Err(error) = &valid {
            println!("  invalid batch at position {position}: {error}");
            problems += 1;
        }
        if print_data {
            match entry
                .records(DEFAULT_MAX_DECOMPRESSED_BYTES)
                .and_then(|records| {
                    let lines: Vec<String> = records
                        .to_vec()?
                        .iter()
                        .map(|record| record_line(entry, record))
                        .collect();
                    Ok(lines)
                }) {
                Ok(lines) => lines.iter().for_each(|line| println!("{line}")),
                Err(error) => {
                    println!(
                        "  cannot read the records of the batch at position {position}: {error}"
                    );
                    problems += 1;
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    match scan {
        ScanEnd::Clean { position } if position < end => {
            println!(
                "Found {} bytes at position {position} that do not hold a whole batch (a torn write or a preallocated tail)",
                end - position
            );
            problems += 1;
        }
        ScanEnd::Corrupt { position, reason } => {
            println!(
                "Found a corrupt entry at position {position}: {reason}; the rest of the file ({} bytes) was not read",
                end - position
            );
            problems += 1;
        }
        _ => {}
    }
    Ok(problems == 0)
}

fn batch_line(position: u64, entry: &FileEntry<'_>, valid: bool) -> String {
    match entry {
        FileEntry::V2(batch) => {
            let attributes = batch.attributes();
            let codec = batch.compression().map_or_else(
                |_| format!("unknown({})", attributes.compression_id()),
                |c| c.name().to_owned(),
            );
            let horizon = batch.delete_horizon_ms().map_or_else(
                || "OptionalLong.empty".to_owned(),
                |h| format!("OptionalLong[{h}]"),
            );
            format!(
                "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} producerEpoch: {} \
                 partitionLeaderEpoch: {} isTransactional: {} isControl: {} deleteHorizonMs: {horizon} position: {position} \
                 {}: {} size: {} magic: {} compresscodec: {codec} crc: {} isvalid: {valid}",
                batch.base_offset(),
                batch.last_offset(),
                batch.records_count(),
                batch.base_sequence(),
                batch.last_sequence(),
                batch.producer_id(),
                batch.producer_epoch(),
                batch.partition_leader_epoch(),
                batch.is_transactional(),
                batch.is_control(),
                batch.timestamp_type().name(),
                batch.max_timestamp(),
                batch.size_in_bytes(),
                batch.magic(),
                batch.stored_crc(),
            )
        }
        FileEntry::Legacy(message) => {
            let codec = message
                .compression()
                .map_or_else(|_| "unknown".to_owned(), |c| c.name().to_owned());
            let time = if message.magic() == 0 {
                "NoTimestampType: -1".to_owned()
            } else {
                format!(
                    "{}: {}",
                    message.timestamp_type().name(),
                    message.timestamp()
                )
            };
            format!(
                "offset: {} position: {position} {time} size: {} magic: {} compresscodec: {codec} crc: {} isvalid: {valid}",
                message.offset(),
                message.size_in_bytes(),
                message.magic(),
                message.stored_crc(),
            )
        }
    }
}

/// Bytes as UTF-8 text, with control characters escaped so binary payloads cannot garble a
/// terminal (Kafka prints them raw).
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| {
            if c.is_control() {
                format!("\\x{:02x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn record_line(entry: &FileEntry<'_>, record: &Record<'_>) -> String {
    let mut line = format!(
        "| offset: {} {}: {}",
        record.offset,
        entry.timestamp_type().name(),
        record.timestamp
    );
    let key_size = record.key.map_or(-1, |key| key.len() as i64);
    let value_size = record.value.map_or(-1, |value| value.len() as i64);
    let _ = write!(line, " keySize: {key_size} valueSize: {value_size}");
    if let FileEntry::V2(batch) = entry {
        let sequence = if batch.base_sequence() < 0 {
            -1
        } else {
            i64::from(batch.base_sequence()) + (record.offset - batch.base_offset())
        };
        let header_keys: Vec<String> = record.headers().map(|header| text(header.key)).collect();
        let _ = write!(
            line,
            " sequence: {sequence} headerKeys: [{}]",
            header_keys.join(",")
        );
        if batch.is_control() {
            let kind = record.key.and_then(ControlType::from_key);
            let epoch = record.value.and_then(marker_coordinator_epoch);
            match (kind, epoch) {
                (Some(kind @ (ControlType::Abort | ControlType::Commit)), Some(epoch)) => {
                    let _ = write!(
                        line,
                        " endTxnMarker: {} coordinatorEpoch: {epoch}",
                        kind.name()
                    );
                }
                (Some(kind), _) => {
                    let _ = write!(line, " controlType: {}", kind.name());
                }
                _ => {}
            }
            return line;
        }
        for header in record.headers() {
            let value = header.value.map_or_else(|| "null".to_owned(), text);
            let _ = write!(line, " header: {}={value}", text(header.key));
        }
    }
    if let Some(key) = record.key {
        let _ = write!(line, " key: {}", text(key));
    }
    let _ = write!(
        line,
        " payload: {}",
        record.value.map_or_else(|| "null".to_owned(), text)
    );
    line
}

/// Reads a whole index file as raw entries (not memory-mapped: a dump must not grow or change it).
fn read_entries(path: &Path, entry_size: usize) -> anyhow::Result<(Vec<Vec<u8>>, usize)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let trailing = bytes.len() % entry_size;
    let entries = bytes.chunks_exact(entry_size).map(<[u8]>::to_vec).collect();
    Ok((entries, trailing))
}

fn be_i32(bytes: &[u8], at: usize) -> i32 {
    let mut buf = [0u8; 4];
    buf.copy_from_slice(&bytes[at..at + 4]);
    i32::from_be_bytes(buf)
}

fn be_i64(bytes: &[u8], at: usize) -> i64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&bytes[at..at + 8]);
    i64::from_be_bytes(buf)
}

/// The `.log` beside an index file, when it exists.
fn log_beside(index_path: &Path, suffix: &str) -> Option<RecordsFile> {
    let text = index_path.to_str()?;
    let log = PathBuf::from(format!("{}{LOG_SUFFIX}", text.strip_suffix(suffix)?));
    log.is_file()
        .then(|| RecordsFile::open(&log, None).ok())
        .flatten()
}

fn dump_offset_index(path: &Path) -> anyhow::Result<bool> {
    let base = base_offset_of(path)?;
    let (entries, trailing) = read_entries(path, 8)?;
    let log = log_beside(path, INDEX_SUFFIX);
    let mut problems = Vec::new();
    if trailing != 0 {
        problems.push(format!(
            "the file ends with {trailing} bytes that are not a whole 8-byte entry"
        ));
    }
    let mut previous = None;
    for (slot, entry) in entries.iter().enumerate() {
        let offset = base + i64::from(be_i32(entry, 0));
        let position = be_i32(entry, 4) as u32;
        if offset == base && position == 0 && slot > 0 {
            // Zero-filled preallocated tail of an active segment's index: no more entries.
            println!(
                "({} zero entries follow: the preallocated tail of an active index)",
                entries.len() - slot
            );
            break;
        }
        println!("offset: {offset} position: {position}");
        if previous.is_some_and(|previous| offset <= previous) {
            problems.push(format!(
                "entry {slot} (byte {}): offset {offset} does not increase",
                slot * 8
            ));
        }
        previous = Some(offset);
        if let Some(log) = &log {
            match log.read_entry_header(u64::from(position), log.size()) {
                Ok(Some(EntrySummary { last_offset, .. })) if last_offset == offset => {}
                Ok(Some(summary)) => problems.push(format!(
                    "entry {slot} (byte {}): offset {offset} points at position {position}, where the batch's last offset is {}",
                    slot * 8,
                    summary.last_offset
                )),
                Ok(None) => problems.push(format!(
                    "entry {slot} (byte {}): position {position} is past the end of the log ({} bytes)",
                    slot * 8,
                    log.size()
                )),
                Err(error) => problems.push(format!("entry {slot} (byte {}): {error}", slot * 8)),
            }
        }
    }
    report(path, log.is_some(), &problems)
}

fn dump_time_index(path: &Path) -> anyhow::Result<bool> {
    let base = base_offset_of(path)?;
    let (entries, trailing) = read_entries(path, 12)?;
    let log = log_beside(path, TIME_INDEX_SUFFIX);
    let mut problems = Vec::new();
    if trailing != 0 {
        problems.push(format!(
            "the file ends with {trailing} bytes that are not a whole 12-byte entry"
        ));
    }
    let mut previous: Option<(i64, i64)> = None;
    let batches = match &log {
        Some(log) => {
            let mut all = Vec::new();
            log.walk_headers(0, log.size(), |summary| {
                all.push(*summary);
                ControlFlow::Continue(())
            })?;
            all
        }
        None => Vec::new(),
    };
    for (slot, entry) in entries.iter().enumerate() {
        let timestamp = be_i64(entry, 0);
        let offset = base + i64::from(be_i32(entry, 8));
        if timestamp == 0 && offset == base && slot > 0 {
            println!(
                "({} zero entries follow: the preallocated tail of an active index)",
                entries.len() - slot
            );
            break;
        }
        println!("timestamp: {timestamp} offset: {offset}");
        if let Some((previous_timestamp, previous_offset)) = previous
            && (timestamp <= previous_timestamp || offset < previous_offset)
        {
            problems.push(format!("entry {slot} (byte {}): out of order after ({previous_timestamp}, {previous_offset})", slot * 12));
        }
        previous = Some((timestamp, offset));
        if log.is_some() {
            // The entry says: the largest timestamp up to `offset` is `timestamp`.
            let actual = batches
                .iter()
                .filter(|summary| summary.last_offset <= offset)
                .map(|summary| summary.max_timestamp)
                .max();
            if actual != Some(timestamp) {
                problems.push(format!(
                    "entry {slot} (byte {}): indexed timestamp {timestamp} at offset {offset}, but the log's largest timestamp up to that offset is {}",
                    slot * 12,
                    actual.map_or_else(|| "none".to_owned(), |t| t.to_string())
                ));
            }
        }
    }
    report(path, log.is_some(), &problems)
}

fn report(path: &Path, had_log: bool, problems: &[String]) -> anyhow::Result<bool> {
    if problems.is_empty() {
        if had_log {
            println!("{}: every entry agrees with the log", path.display());
        } else {
            println!(
                "{}: no .log beside it to check the entries against",
                path.display()
            );
        }
        return Ok(true);
    }
    println!("Mismatches in {}:", path.display());
    for problem in problems {
        println!("  {problem}");
    }
    Ok(false)
}
