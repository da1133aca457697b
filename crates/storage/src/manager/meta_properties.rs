//! `meta.properties`: which cluster and node a data directory belongs to, in Java Properties
//! text as Kafka writes it.
//!
//! | version | keys                                                                 |
//! |---------|----------------------------------------------------------------------|
//! | 0       | `broker.id`, optional `cluster.id` (ZooKeeper-era brokers)           |
//! | 1       | `node.id`, `cluster.id` (required), optional `directory.id` (KRaft) |
//!
//! `directory.id` and generated cluster ids are Kafka `Uuid`s: 16 random bytes in base64url
//! without padding (22 characters).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use super::data_dir::DataDir;
use super::properties::parse_properties;
use crate::error::{Result, StorageError};
use crate::fs::atomic_write;

/// The file naming the cluster and node a data directory belongs to.
pub const META_PROPERTIES: &str = "meta.properties";

/// The parsed contents of a `meta.properties`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    /// The format: 0 (ZooKeeper-era, `broker.id`) or 1 (KRaft, `node.id`).
    pub version: u32,
    /// The node the directory belongs to (`node.id`, or `broker.id` in version 0).
    pub node_id: i32,
    /// `cluster.id`; `None` when absent or empty, which only version 0 allows.
    pub cluster_id: Option<String>,
    /// `directory.id`, the directory's own Kafka `Uuid`, when present.
    pub directory_id: Option<String>,
}

impl MetaProperties {
    /// Reads the file in `dir`; `Ok(None)` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Self>> {
        let path = dir.join(META_PROPERTIES);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(StorageError::io("read", &path)(error)),
        };
        let malformed = |reason: String| StorageError::MalformedFile {
            path: path.clone(),
            line: 0,
            reason,
        };
        let properties = parse_properties(&text);
        let int = |key: &str| -> Result<Option<i64>> {
            properties
                .get(key)
                .map(|value| {
                    value
                        .parse::<i64>()
                        .map_err(|_| malformed(format!("{key}={value} is not an integer")))
                })
                .transpose()
        };
        let version = int("version")?.ok_or_else(|| malformed("no version".into()))?;
        let cluster_id = properties
            .get("cluster.id")
            .cloned()
            .filter(|id| !id.is_empty());
        let (node_key, version) = match version {
            0 => ("broker.id", 0),
            1 => ("node.id", 1),
            other => return Err(malformed(format!("unsupported version {other}"))),
        };
        let node_id = int(node_key)?.ok_or_else(|| malformed(format!("no {node_key}")))?;
        let node_id = i32::try_from(node_id)
            .map_err(|_| malformed(format!("{node_key} {node_id} is out of range")))?;
        if version == 1 && cluster_id.is_none() {
            return Err(malformed("version 1 requires cluster.id".into()));
        }
        Ok(Some(Self {
            version,
            node_id,
            cluster_id,
            directory_id: properties.get("directory.id").cloned(),
        }))
    }

    /// Writes the file in `dir` atomically, as Kafka does (a comment line and a date line first).
    pub fn write(&self, dir: &Path, now: &str) -> Result<()> {
        let mut text = format!("#\n#{now}\n");
        if let Some(directory_id) = &self.directory_id {
            let _ = writeln!(text, "directory.id={directory_id}");
        }
        let node_key = if self.version == 0 {
            "broker.id"
        } else {
            "node.id"
        };
        let _ = writeln!(text, "{node_key}={}", self.node_id);
        let _ = writeln!(text, "version={}", self.version);
        if let Some(cluster_id) = &self.cluster_id {
            let _ = writeln!(text, "cluster.id={cluster_id}");
        }
        atomic_write(&dir.join(META_PROPERTIES), text.as_bytes())
    }
}

/// A new random Kafka `Uuid` in its text form, as `Uuid.randomUuid` makes them: never a reserved
/// id, and never one whose text starts with `-` (which Kafka's command-line tools would take for
/// an option).
pub fn random_uuid() -> String {
    super::TopicId::random().to_string()
}

/// The cluster and node the data directories belong to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Identity {
    pub cluster_id: String,
    pub node_id: i32,
}

/// Checks every directory's `meta.properties` against each other and the configured node id,
/// and writes one where a directory has none.
pub(super) fn settle_identity(
    dirs: &[Arc<DataDir>],
    configured_node: Option<i32>,
    now_ms: i64,
) -> Result<Identity> {
    // A directory whose file cannot be read goes offline, as Kafka counts it among its failed
    // log dirs; one whose file says something wrong stops the start.
    let mut metas = Vec::with_capacity(dirs.len());
    for dir in dirs {
        match MetaProperties::read(dir.path()) {
            Ok(meta) => metas.push((dir, meta)),
            Err(error @ StorageError::Io { .. }) => {
                tracing::error!(dir = %dir.path().display(), %error, "cannot read meta.properties: the directory is offline");
                dir.health().mark_offline(&error);
            }
            Err(other) => return Err(StorageError::Fatal(other.to_string())),
        }
    }
    let mut cluster: Option<(String, &Path)> = None;
    let mut node: Option<(i32, &Path)> = None;
    for (dir, meta) in &metas {
        let Some(meta) = meta else { continue };
        if let Some(id) = &meta.cluster_id {
            match &cluster {
                Some((existing, first)) if existing != id => {
                    return Err(StorageError::Fatal(format!(
                        "data directory {} belongs to cluster {id}, but {} belongs to cluster {existing}",
                        dir.path().display(),
                        first.display()
                    )));
                }
                Some(_) => {}
                None => cluster = Some((id.clone(), dir.path())),
            }
        }
        if let Some(expected) = configured_node.filter(|expected| *expected != meta.node_id) {
            return Err(StorageError::Fatal(format!(
                "data directory {} belongs to node {}, but this node is configured as node.id={expected}",
                dir.path().display(),
                meta.node_id
            )));
        }
        match node {
            Some((existing, first)) if existing != meta.node_id => {
                return Err(StorageError::Fatal(format!(
                    "data directory {} belongs to node {}, but {} belongs to node {existing}",
                    dir.path().display(),
                    meta.node_id,
                    first.display()
                )));
            }
            Some(_) => {}
            None => node = Some((meta.node_id, dir.path())),
        }
    }
    let cluster_id = cluster.map_or_else(random_uuid, |(id, _)| id);
    let node_id = configured_node.or(node.map(|(id, _)| id)).unwrap_or(0);
    let written_at = format!("written by ferrolog at {now_ms} ms since the epoch");
    for (dir, meta) in &metas {
        if meta.is_none() {
            let written = MetaProperties {
                version: 1,
                node_id,
                cluster_id: Some(cluster_id.clone()),
                directory_id: Some(random_uuid()),
            }
            .write(dir.path(), &written_at);
            if let Err(error) = written {
                // A full or failing disk: the directory stays out of service, the others serve.
                tracing::error!(dir = %dir.path().display(), %error, "cannot write meta.properties: the directory is offline");
                dir.health().mark_offline(&error);
            }
        }
    }
    Ok(Identity {
        cluster_id,
        node_id,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    #[test]
    fn reads_zookeeper_and_kraft_files_as_kafka_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(META_PROPERTIES),
            "#\n#Sat Dec 11 10:20:30 IST 2021\nbroker.id=0\nversion=0\ncluster.id=lRaQCIBoRh2xRKLuP9CAQg\n",
        )
        .unwrap();
        let meta = MetaProperties::read(dir.path()).unwrap().unwrap();
        assert_eq!((meta.version, meta.node_id), (0, 0));
        assert_eq!(meta.cluster_id.as_deref(), Some("lRaQCIBoRh2xRKLuP9CAQg"));
        std::fs::write(
            dir.path().join(META_PROPERTIES),
            "#\n#x\nnode.id=1\ndirectory.id=XHhkr4tkSsD900pOQ8pPfg\nversion=1\ncluster.id=q1w2e3r4t5y6u7i8o9p0\n",
        )
        .unwrap();
        let meta = MetaProperties::read(dir.path()).unwrap().unwrap();
        assert_eq!((meta.version, meta.node_id), (1, 1));
        assert_eq!(meta.directory_id.as_deref(), Some("XHhkr4tkSsD900pOQ8pPfg"));
    }

    #[test]
    fn round_trips_and_rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaProperties {
            version: 1,
            node_id: 3,
            cluster_id: Some(random_uuid()),
            directory_id: Some(random_uuid()),
        };
        meta.write(dir.path(), "today").unwrap();
        assert_eq!(MetaProperties::read(dir.path()).unwrap(), Some(meta));
        for bad in [
            "version=1\nnode.id=1\n",
            "version=2\nnode.id=1\n",
            "version=0\nbroker.id=x\n",
            "node.id=1\n",
        ] {
            std::fs::write(dir.path().join(META_PROPERTIES), bad).unwrap();
            assert!(MetaProperties::read(dir.path()).is_err(), "{bad:?}");
        }
        assert_eq!(
            MetaProperties::read(&dir.path().join("none")).unwrap(),
            None
        );
    }

    #[test]
    fn uuids_are_22_base64url_characters_never_starting_with_a_dash() {
        // A dash starts about one random id in 64; Kafka's `Uuid.randomUuid` never makes one.
        for _ in 0..1_000 {
            let id = random_uuid();
            assert_eq!(id.len(), 22);
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            );
            assert!(!id.starts_with('-'), "{id}");
            assert_eq!(
                super::super::TopicId::parse(&id).map(|parsed| parsed.to_string()),
                Some(id)
            );
        }
    }
}
