//! `ferrolog serve`: the broker on a data directory, until Ctrl-C or SIGTERM (a second Ctrl-C
//! exits at once). A clean stop flushes and closes every log and writes the clean-shutdown
//! markers, so the next start needs no recovery.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use ferrolog_broker::{BrokerConfig, Context};
use ferrolog_storage::SystemClock;
use ferrolog_storage::manager::{LogManager, ManagerConfig};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: SocketAddr,
    /// Data directories (Kafka's `log.dirs`), comma-separated.
    #[arg(long, default_value = "ferrolog-data", value_delimiter = ',')]
    log_dirs: Vec<PathBuf>,
    /// Partitions of a topic created on first use (`num.partitions`).
    #[arg(long, default_value_t = 1)]
    num_partitions: i32,
}

pub fn run(args: &ServeArgs) -> anyhow::Result<()> {
    let manager_config = ManagerConfig {
        log_dirs: args.log_dirs.clone(),
        ..ManagerConfig::default()
    };
    let manager = Arc::new(
        LogManager::open(manager_config, Arc::new(SystemClock))
            .context("opening the data directories")?,
    );
    manager.start_background()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        let local = listener.local_addr()?;
        let context = Arc::new(Context {
            manager: Arc::clone(&manager),
            config: BrokerConfig {
                advertised_host: local.ip().to_string(),
                advertised_port: local.port(),
                num_partitions: args.num_partitions,
                ..BrokerConfig::default()
            },
        });
        tracing::info!(%local, "serving");
        eprintln!("ferrolog serving Kafka clients on {local} (data in {})", args.log_dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(","));
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            served = ferrolog_broker::serve(listener, context) => served.map_err(anyhow::Error::from),
            _ = tokio::signal::ctrl_c() => Ok(()),
            _ = terminate.recv() => Ok(()),
        }
    });
    eprintln!("shutting down (Ctrl-C again to exit at once)");
    std::thread::spawn(|| {
        // A second Ctrl-C while the logs are being flushed exits without waiting.
        let second = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(second) = second {
            second.block_on(async {
                let _ = tokio::signal::ctrl_c().await;
                std::process::exit(130);
            });
        }
    });
    runtime.shutdown_background();
    manager.shutdown()?;
    outcome
}
