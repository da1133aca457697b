//! Control records (batch attribute bit 5), written by brokers and coordinators, never by
//! producers.
//!
//! | part  | layout                                                       |
//! |-------|--------------------------------------------------------------|
//! | key   | `version i16` (0), `type i16`                                |
//! | value | for ABORT/COMMIT: `version i16` (0), `coordinatorEpoch i32`  |

use crate::be;

/// The type of a control record, from its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlType {
    Abort,
    Commit,
    LeaderChange,
    SnapshotHeader,
    SnapshotFooter,
    Unknown(i16),
}

impl ControlType {
    /// Reads the type from a control record's key; `None` when the key is too short.
    pub fn from_key(key: &[u8]) -> Option<Self> {
        if key.len() < 4 {
            return None;
        }
        Some(match be::i16_at(key, 2) {
            0 => Self::Abort,
            1 => Self::Commit,
            2 => Self::LeaderChange,
            3 => Self::SnapshotHeader,
            4 => Self::SnapshotFooter,
            other => Self::Unknown(other),
        })
    }

    pub fn name(self) -> String {
        match self {
            Self::Abort => "ABORT".into(),
            Self::Commit => "COMMIT".into(),
            Self::LeaderChange => "LEADER_CHANGE".into(),
            Self::SnapshotHeader => "SNAPSHOT_HEADER".into(),
            Self::SnapshotFooter => "SNAPSHOT_FOOTER".into(),
            Self::Unknown(id) => format!("UNKNOWN({id})"),
        }
    }
}

/// The coordinator epoch of a transaction marker's value, when it has the expected layout.
pub fn marker_coordinator_epoch(value: &[u8]) -> Option<i32> {
    (value.len() >= 6).then(|| be::i32_at(value, 2))
}

/// Builds the key of a control record of `kind` (0 ABORT, 1 COMMIT, …).
pub fn control_key(kind: i16) -> [u8; 4] {
    let mut key = [0u8; 4];
    key[2..].copy_from_slice(&kind.to_be_bytes());
    key
}

/// Builds the value of a transaction marker.
pub fn marker_value(coordinator_epoch: i32) -> [u8; 6] {
    let mut value = [0u8; 6];
    value[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
    value
}
