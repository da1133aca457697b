//! `ferrolog log-dirs`: asks a running broker (ferrolog or Kafka) for its data directories
//! with DescribeLogDirs and prints each with its partitions' sizes, as `kafka-log-dirs
//! --describe` does, and with the damage ferrolog's scrubber found in each partition (the
//! answer's damage tagged field). Exits non-zero when a directory is offline or a partition
//! holds known damage.

use std::collections::BTreeMap;

use ferrolog_broker::handlers::describe_log_dirs::DAMAGE_TAG;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::describe_log_dirs_response::DescribeLogDirsResult;
use kafka_protocol::messages::{ApiKey, DescribeLogDirsRequest, DescribeLogDirsResponse};

use crate::kafka_connection::KafkaConnection;

#[derive(Debug, clap::Args)]
pub struct LogDirsArgs {
    /// The broker to ask, host:port of a plaintext listener.
    #[arg(long)]
    bootstrap_server: String,
    /// Only partitions holding known damage, and offline directories.
    #[arg(long)]
    damaged_only: bool,
}

/// Prints the broker's directories; `Ok(false)` when any is offline or holds damage.
pub fn run(args: &LogDirsArgs) -> anyhow::Result<bool> {
    let mut broker = KafkaConnection::open(&args.bootstrap_server, "ferrolog-log-dirs")?;
    let request = DescribeLogDirsRequest::default().with_topics(None);
    let described: DescribeLogDirsResponse = broker.send(ApiKey::DescribeLogDirs, 4, &request)?;
    if let Some(error) = ResponseError::try_from_code(described.error_code) {
        anyhow::bail!("{} refused DescribeLogDirs: {error}", args.bootstrap_server);
    }
    let mut whole = true;
    for dir in &described.results {
        whole &= print_dir(dir, args.damaged_only);
    }
    Ok(whole)
}

/// Prints one directory; false when it is offline or a partition in it holds damage.
fn print_dir(dir: &DescribeLogDirsResult, damaged_only: bool) -> bool {
    if let Some(error) = ResponseError::try_from_code(dir.error_code) {
        println!("{}: {error}", dir.log_dir.as_str());
        return false;
    }
    let mut lines = BTreeMap::new();
    for topic in &dir.topics {
        for partition in &topic.partitions {
            let damage = partition
                .unknown_tagged_fields
                .get(&DAMAGE_TAG)
                .map(|text| String::from_utf8_lossy(text).into_owned());
            if damaged_only && damage.is_none() {
                continue;
            }
            let future = if partition.is_future_key {
                format!(" (moving here, {} offsets behind)", partition.offset_lag)
            } else {
                String::new()
            };
            let mut line = format!(
                "  {}-{}: {} bytes{future}",
                topic.name.as_str(),
                partition.partition_index,
                partition.partition_size
            );
            for damaged in damage.iter().flat_map(|text| text.lines()) {
                line.push_str(&format!("\n    DAMAGED: {damaged}"));
            }
            lines.insert((topic.name.to_string(), partition.partition_index), line);
        }
    }
    let damaged = lines.values().any(|line| line.contains("DAMAGED:"));
    if damaged_only && !damaged {
        return true;
    }
    let sizes = if dir.total_bytes >= 0 {
        format!(" ({} of {} bytes free)", dir.usable_bytes, dir.total_bytes)
    } else {
        String::new()
    };
    println!("{}{sizes}", dir.log_dir.as_str());
    for line in lines.values() {
        println!("{line}");
    }
    !damaged
}
