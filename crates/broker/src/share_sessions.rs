//! Share sessions (Kafka's `ShareSessionCache`): one per (group, member), opened by a ShareFetch
//! at epoch 0, moved on by one at each later request, closed at epoch −1. A session remembers
//! the partitions its member fetches, so a later request need name only what changed. There is
//! no idle eviction: a session ends with its request at −1, or with its connection.
//!
//! Bounded by `group.share.max.share.sessions`: one more is refused SHARE_SESSION_LIMIT_REACHED.

use std::collections::{HashMap, HashSet};

use ferrolog_storage::manager::TopicId;
use parking_lot::Mutex;

use crate::errors;

/// The connection a request came on, as the sessions know it: its session's address, the same
/// for every request of the connection and for its end.
pub fn connection_id(session: &crate::session::Session) -> usize {
    std::ptr::from_ref(session) as usize
}

/// The most partitions one share session may name (Kafka has no such bound; a client naming
/// partitions by made-up topic ids would otherwise grow a session without end).
pub const MAX_SESSION_PARTITIONS: usize = 10_000;

/// A share partition a session fetches.
pub type SessionPartition = (TopicId, i32);

#[derive(Debug, Clone)]
struct Session {
    epoch: i32,
    partitions: Vec<SessionPartition>,
    /// The connection that opened it (its session's address), to end it when that closes.
    connection: usize,
}

/// What a fetch's session says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// Epoch 0: a new session with the request's partitions.
    Full(Vec<SessionPartition>),
    /// A later epoch: every partition of the session; `added` ones are answered even empty.
    Incremental {
        all: Vec<SessionPartition>,
        added: Vec<SessionPartition>,
    },
    /// Epoch −1: the session ends after its acknowledgements; nothing is fetched.
    Final(Vec<SessionPartition>),
}

#[derive(Debug, Default)]
pub struct ShareSessions {
    sessions: Mutex<HashMap<(String, String), Session>>,
}

/// Kafka's next epoch: one more, wrapping to 1.
fn next_epoch(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

impl ShareSessions {
    /// The context of a ShareFetch, as Kafka's `SharePartitionManager#newContext`.
    pub fn fetch_context(
        &self,
        key: (String, String),
        epoch: i32,
        requested: Vec<SessionPartition>,
        forgotten: &[SessionPartition],
        connection: usize,
        capacity: u32,
    ) -> Result<Context, i16> {
        let mut sessions = self.sessions.lock();
        match epoch {
            0 => {
                sessions.remove(&key);
                if sessions.len() >= capacity as usize {
                    return Err(errors::SHARE_SESSION_LIMIT_REACHED);
                }
                let partitions = dedup(requested);
                if partitions.len() > MAX_SESSION_PARTITIONS {
                    return Err(errors::INVALID_REQUEST);
                }
                let session = Session {
                    epoch: 1,
                    partitions: partitions.clone(),
                    connection,
                };
                sessions.insert(key, session);
                Ok(Context::Full(partitions))
            }
            -1 => {
                let session = sessions.get(&key).ok_or(errors::SHARE_SESSION_NOT_FOUND)?;
                Ok(Context::Final(session.partitions.clone()))
            }
            _ => {
                let session = sessions
                    .get_mut(&key)
                    .ok_or(errors::SHARE_SESSION_NOT_FOUND)?;
                if session.epoch != epoch {
                    return Err(errors::INVALID_SHARE_SESSION_EPOCH);
                }
                let held: HashSet<SessionPartition> = session.partitions.iter().copied().collect();
                let added: Vec<SessionPartition> = dedup(requested)
                    .into_iter()
                    .filter(|p| !held.contains(p))
                    .collect();
                if held.len() + added.len() > MAX_SESSION_PARTITIONS {
                    return Err(errors::INVALID_REQUEST);
                }
                session.partitions.extend(added.iter().copied());
                let forgotten: HashSet<&SessionPartition> = forgotten.iter().collect();
                session.partitions.retain(|p| !forgotten.contains(p));
                session.epoch = next_epoch(epoch);
                Ok(Context::Incremental {
                    all: session.partitions.clone(),
                    added,
                })
            }
        }
    }

    /// A ShareAcknowledge's check of its session: epoch 0 is not one, −1 ends it (after the
    /// acknowledgements), another must be the session's, which moves on.
    pub fn acknowledge_context(&self, key: &(String, String), epoch: i32) -> Result<(), i16> {
        if epoch == 0 {
            return Err(errors::INVALID_SHARE_SESSION_EPOCH);
        }
        let mut sessions = self.sessions.lock();
        let session = sessions
            .get_mut(key)
            .ok_or(errors::SHARE_SESSION_NOT_FOUND)?;
        if epoch != -1 {
            if session.epoch != epoch {
                return Err(errors::INVALID_SHARE_SESSION_EPOCH);
            }
            session.epoch = next_epoch(epoch);
        }
        Ok(())
    }

    /// Ends a session; returns its partitions, whose records its member holds are then released.
    pub fn close(&self, key: &(String, String)) -> Option<Vec<SessionPartition>> {
        self.sessions
            .lock()
            .remove(key)
            .map(|session| session.partitions)
    }

    /// Ends every session `connection` opened; returns their keys and partitions.
    pub fn close_connection(
        &self,
        connection: usize,
    ) -> Vec<((String, String), Vec<SessionPartition>)> {
        let mut sessions = self.sessions.lock();
        let keys: Vec<(String, String)> = sessions
            .iter()
            .filter(|(_, s)| s.connection == connection)
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                sessions
                    .remove(&key)
                    .map(|session| (key, session.partitions))
            })
            .collect()
    }

    /// Ends every session (share groups were turned off).
    pub fn close_all(&self) {
        self.sessions.lock().clear();
    }

    /// Whether any session of `group` is open.
    pub fn group_has_sessions(&self, group: &str) -> bool {
        self.sessions.lock().keys().any(|(g, _)| g == group)
    }

    pub fn open_count(&self) -> usize {
        self.sessions.lock().len()
    }
}

/// `partitions` without repeats, in their order.
fn dedup(partitions: Vec<SessionPartition>) -> Vec<SessionPartition> {
    let mut seen = HashSet::with_capacity(partitions.len());
    partitions.into_iter().filter(|p| seen.insert(*p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> (String, String) {
        ("g".to_owned(), "m".to_owned())
    }

    #[test]
    fn epochs_as_kafka_counts_them() {
        let sessions = ShareSessions::default();
        let p = |n: i32| (TopicId([1; 16]), n);
        assert_eq!(
            sessions.fetch_context(key(), 1, vec![], &[], 7, 10),
            Err(errors::SHARE_SESSION_NOT_FOUND)
        );
        assert_eq!(
            sessions.fetch_context(key(), 0, vec![p(0), p(0)], &[], 7, 10),
            Ok(Context::Full(vec![p(0)]))
        );
        assert_eq!(
            sessions.fetch_context(key(), 2, vec![], &[], 7, 10),
            Err(errors::INVALID_SHARE_SESSION_EPOCH)
        );
        assert_eq!(
            sessions.fetch_context(key(), 1, vec![p(1)], &[], 7, 10),
            Ok(Context::Incremental {
                all: vec![p(0), p(1)],
                added: vec![p(1)]
            })
        );
        assert_eq!(
            sessions.acknowledge_context(&key(), 0),
            Err(errors::INVALID_SHARE_SESSION_EPOCH)
        );
        assert_eq!(sessions.acknowledge_context(&key(), 2), Ok(()));
        assert_eq!(
            sessions.fetch_context(key(), 3, vec![], &[p(0)], 7, 10),
            Ok(Context::Incremental {
                all: vec![p(1)],
                added: vec![]
            })
        );
        assert_eq!(
            sessions.fetch_context(key(), -1, vec![], &[], 7, 10),
            Ok(Context::Final(vec![p(1)]))
        );
        assert_eq!(sessions.close_connection(7), vec![(key(), vec![p(1)])]);
        assert_eq!(sessions.open_count(), 0);
        assert_eq!(next_epoch(i32::MAX), 1);
    }

    #[test]
    fn the_cache_is_bounded() {
        let sessions = ShareSessions::default();
        assert!(sessions.fetch_context(key(), 0, vec![], &[], 1, 1).is_ok());
        let other = ("g".to_owned(), "n".to_owned());
        assert_eq!(
            sessions.fetch_context(other, 0, vec![], &[], 1, 1),
            Err(errors::SHARE_SESSION_LIMIT_REACHED)
        );
        assert!(
            sessions.fetch_context(key(), 0, vec![], &[], 1, 1).is_ok(),
            "reopening replaces its own"
        );
    }
}
