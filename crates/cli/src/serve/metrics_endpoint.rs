//! The Prometheus endpoint (`metrics.listener`), started before the logs load so that recovery
//! progress can be watched; the LogManager's figures and the metrics clients push join it once
//! they exist.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use ferrolog_storage::manager::LogManager;

/// The cells the metrics endpoint reads once filled: the LogManager, and what clients pushed.
pub(super) type MetricsCells = (
    Arc<std::sync::OnceLock<Arc<LogManager>>>,
    Arc<std::sync::OnceLock<ferrolog_broker::metrics::MoreMetrics>>,
);

/// Serves `metrics.listener`, when set, from now on.
pub(super) fn start(
    runtime: &tokio::runtime::Runtime,
    properties: &BTreeMap<String, String>,
) -> anyhow::Result<MetricsCells> {
    let cells: MetricsCells = Default::default();
    let Some(value) = properties.get("metrics.listener") else {
        return Ok(cells);
    };
    let address = parse_metrics_listener(value)?;
    let handle = ferrolog_broker::metrics::install().map_err(anyhow::Error::msg)?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(address))
        .with_context(|| format!("metrics.listener: listening on {address}"))?;
    tracing::info!(%address, "serving Prometheus metrics");
    runtime.spawn(ferrolog_broker::metrics::serve(
        listener,
        handle,
        Arc::clone(&cells.0),
        Arc::clone(&cells.1),
    ));
    Ok(cells)
}

/// `metrics.listener`: `http://host:port` or `host:port`, an IP address.
fn parse_metrics_listener(value: &str) -> anyhow::Result<SocketAddr> {
    let address = value.trim();
    let address = address.strip_prefix("http://").unwrap_or(address);
    address.parse().with_context(|| {
        format!("invalid value {value:?} for metrics.listener: expected http://host:port with an IP address")
    })
}
