//! The `ferrolog` command.

mod check;
mod demo;
mod dump;
mod kafka_connection;
mod log_dirs;
mod move_to_kafka;
mod recover;
mod serve;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "ferrolog", version, about = "Kafka-compatible log storage")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve Kafka clients (produce, fetch, metadata, offsets) from a data directory.
    Serve(serve::ServeArgs),
    /// Print the contents of .log, .index and .timeindex files, as kafka-dump-log.sh does.
    DumpLog(dump::DumpArgs),
    /// Check whole data directories offline: checksums, offsets, indexes, snapshots,
    /// checkpoints, leftover files. Exits non-zero when anything is wrong.
    Verify(verify::VerifyArgs),
    /// Run the startup recovery offline and report what it cut.
    Recover(recover::RecoverArgs),
    /// Ask a running broker for its data directories, their partitions' sizes and the damage
    /// the scrubber found in them. Exits non-zero when a directory is offline or damaged.
    LogDirs(log_dirs::LogDirsArgs),
    /// Carry a stopped ferrolog's data into an Apache Kafka (KRaft) cluster, in two steps:
    /// `create-topics` (Kafka running), then `copy` (Kafka stopped).
    MoveToKafka(move_to_kafka::MoveArgs),
    /// Write records to a partition log in a data directory, reopen it, and read them back.
    Demo {
        /// Data directory to create the log in.
        #[arg(long, default_value = "ferrolog-data")]
        data_dir: PathBuf,
        /// Records to append.
        #[arg(long, default_value_t = 100_000)]
        records: usize,
        /// Bytes per record value.
        #[arg(long, default_value_t = 1024)]
        record_bytes: usize,
    },
}

/// Lets `serve` apply `ferrolog.log.level` from its configuration once it has read it.
static LOG_FILTER: std::sync::OnceLock<
    tracing_subscriber::reload::Handle<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>,
> = std::sync::OnceLock::new();

/// Sets the log filter (`ferrolog.log.level`), unless `FERROLOG_LOG` is set: the environment
/// wins, so an operator can raise the level without editing the configuration.
pub fn set_log_level(directives: &str) -> anyhow::Result<()> {
    if std::env::var_os("FERROLOG_LOG").is_some() {
        return Ok(());
    }
    let filter = tracing_subscriber::EnvFilter::try_new(directives).map_err(|error| {
        anyhow::anyhow!("invalid value {directives:?} for ferrolog.log.level: {error}")
    })?;
    if let Some(handle) = LOG_FILTER.get() {
        handle.reload(filter)?;
    }
    Ok(())
}

/// Replaces the log filter with `directives`, whatever set it (the broker's loggers changed at
/// run time through Kafka's BROKER_LOGGER configs).
pub fn reload_log_filter(directives: &str) -> Result<(), String> {
    let filter = tracing_subscriber::EnvFilter::try_new(directives)
        .map_err(|error| format!("invalid log filter {directives:?}: {error}"))?;
    match LOG_FILTER.get() {
        Some(handle) => handle.reload(filter).map_err(|error| error.to_string()),
        None => Ok(()),
    }
}

fn main() -> ExitCode {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("FERROLOG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    let _ = LOG_FILTER.set(handle);
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colour codes only on a terminal, never in a file, a pipe or a journal.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
        )
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(&args).map(|()| true),
        Command::DumpLog(args) => dump::run(&args),
        Command::Verify(args) => verify::run(&args),
        Command::Recover(args) => recover::run(&args),
        Command::LogDirs(args) => log_dirs::run(&args),
        Command::MoveToKafka(args) => move_to_kafka::run(&args),
        Command::Demo {
            data_dir,
            records,
            record_bytes,
        } => demo::run(&data_dir, records, record_bytes).map(|()| true),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
