//! `ferrolog dump-log`: prints segment files the way Kafka's `kafka-dump-log.sh` does, and
//! checks indexes against the `.log` beside them. Damaged input is reported with its byte
//! position; the dump goes on with the next file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;
use ferrolog_records::control::{ControlType, marker_coordinator_epoch};
use ferrolog_records::{DEFAULT_MAX_DECOMPRESSED_BYTES, FileEntry, Record};
use ferrolog_storage::segment::{INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};

use crate::check::{self, base_offset_of};

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

fn dump_log(path: &Path, print_data: bool) -> anyhow::Result<bool> {
    let base = base_offset_of(path)?;
    println!("Log starting offset: {base}");
    if !path.is_file() {
        bail!("no such file");
    }
    let mut unreadable_records = 0usize;
    let check = check::log_file(path, |position, entry, valid| {
        println!("{}", batch_line(position, entry, valid.is_ok()));
        if let Err(error) = &valid {
            println!("  invalid batch at position {position}: {error}");
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
                    unreadable_records += 1;
                }
            }
        }
    })?;
    for problem in &check.problems {
        println!("Found: {problem}");
    }
    let damaged = match &check.tail {
        Some(tail @ check::Tail::Zeros { .. }) => {
            println!("Note: {}", tail.describe());
            false
        }
        Some(tail) => {
            println!("Found: {}", tail.describe());
            true
        }
        None => false,
    };
    Ok(check.problems.is_empty() && !damaged && unreadable_records == 0)
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
fn dump_offset_index(path: &Path) -> anyhow::Result<bool> {
    let check = check::offset_index(path)?;
    for (offset, position) in &check.entries {
        println!("offset: {offset} position: {position}");
    }
    zero_tail_note(check.zero_tail);
    report(path, check.had_log, &check.problems)
}

fn dump_time_index(path: &Path) -> anyhow::Result<bool> {
    let check = check::time_index(path)?;
    for (timestamp, offset) in &check.entries {
        println!("timestamp: {timestamp} offset: {offset}");
    }
    zero_tail_note(check.zero_tail);
    report(path, check.had_log, &check.problems)
}

fn zero_tail_note(zero_tail: usize) {
    if zero_tail > 0 {
        println!("({zero_tail} zero entries follow: the preallocated tail of an active index)");
    }
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
