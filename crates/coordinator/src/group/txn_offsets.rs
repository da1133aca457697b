//! Offsets committed inside transactions (TxnOffsetCommit): written to the group's
//! `__consumer_offsets` partition as a transactional batch of the producer, pending (invisible
//! to OffsetFetch, which answers UNSTABLE_OFFSET_COMMIT for them when asked for stable offsets)
//! until the transaction coordinator's marker commits or aborts them.

use ferrolog_storage::ProducerEpoch;
use ferrolog_storage::log::MarkerRequest;
use ferrolog_storage::producer::{MarkerKind, TxnVerifier};

use super::membership::check_member;
use super::offsets::CommitRecords;
use super::state::{Group, GroupState};
use super::{CommitEntry, GroupCoordinator};
use crate::errors;

/// The member a TxnOffsetCommit claims to come from (all unset for a producer outside any
/// group's membership).
#[derive(Debug, Clone, Copy)]
pub struct TxnCommitter<'a> {
    pub generation: i32,
    pub member_id: &'a str,
    pub group_instance_id: Option<&'a str>,
}

impl GroupCoordinator {
    /// TxnOffsetCommit for `producer` (id, epoch): one error per entry. The group's partition
    /// must be in the producer's transaction (`verifier`, the transaction coordinator's check).
    pub fn commit_transactional(
        &self,
        group_id: &str,
        producer: (i64, ProducerEpoch),
        member: TxnCommitter<'_>,
        entries: &[CommitEntry],
        verifier: &dyn TxnVerifier,
    ) -> Vec<i16> {
        let all = |code| vec![code; entries.len()];
        if group_id.is_empty() {
            return all(errors::INVALID_GROUP_ID);
        }
        // As Kafka: the group's partition must be in the producer's transaction before the
        // group is looked at (the append asks again before it writes).
        if let Err(error) = verifier.verify(producer.0, producer.1) {
            return all(errors::code_of(&error));
        }
        self.runtime.write(self.partition_of(group_id), |shard, ctx| {
            let now = ctx.now_ms;
            if shard.refuses_new(group_id) && member.generation < 0 {
                return all(errors::GROUP_MAX_SIZE_REACHED);
            }
            let groups = &mut shard.groups;
            // As Kafka's classic groups: a commit with a negative generation to an empty (or
            // missing) group is taken without member checks; otherwise a producer that names no
            // member commits without one, and the group's state is not checked (no
            // REBALANCE_IN_PROGRESS for transactional commits).
            match groups.get(group_id) {
                None if member.generation < 0 => {}
                None => return all(errors::ILLEGAL_GENERATION),
                Some(group) if group.share.is_some() => return all(errors::GROUP_ID_NOT_FOUND),
                Some(group) if group.consumer.is_some() || group.streams.is_some() => {
                    if let Err(code) = self.check_modern_committer(group, &member, entries) {
                        return all(code);
                    }
                }
                Some(group) => {
                    let standalone = member.generation < 0 && group.state == GroupState::Empty;
                    let names_member = member.generation >= 0
                        || !member.member_id.is_empty()
                        || member.group_instance_id.is_some();
                    if !standalone
                        && names_member
                        && let Err(code) = check_member(
                            group,
                            member.member_id,
                            member.group_instance_id,
                            member.generation,
                        )
                    {
                        return all(code);
                    }
                }
            }
            let CommitRecords {
                results,
                records,
                values,
            } = self.commit_records(group_id, entries, now, None);
            if records.is_empty() {
                return results;
            }
            if let Err(error) = ctx.append_transactional(&records, producer, verifier)
            {
                tracing::debug!(group = group_id, %error, "a transactional offset commit was refused");
                // As Kafka's group coordinator maps its write errors.
                let code = match errors::code_of(&error) {
                    errors::KAFKA_STORAGE_ERROR => errors::NOT_COORDINATOR,
                    errors::MESSAGE_TOO_LARGE | errors::RECORD_LIST_TOO_LARGE => {
                        errors::UNKNOWN_SERVER_ERROR
                    }
                    errors::UNKNOWN_SERVER_ERROR => errors::COORDINATOR_NOT_AVAILABLE,
                    code => code,
                };
                return results
                    .into_iter()
                    .map(|result| if result == errors::NONE { code } else { result })
                    .collect();
            }
            // A group first named here exists once its commit is written.
            groups
                .entry(group_id.to_owned())
                .or_insert_with(|| Group::new(group_id, now))
                .pending_txn_offsets
                .entry(producer.0)
                .or_default()
                .extend(values);
            results
        })
    }

    /// The marker of a transaction that committed offsets in `partition` of
    /// A transactional commit to a consumer or streams group, checked as Kafka 4.4 checks it: a
    /// producer naming no member (generation -1, no member id, no instance id) commits as an
    /// outsider; otherwise the member must be in the group at that epoch (an older one for what
    /// it still holds), a stale epoch answered ILLEGAL_GENERATION, which transactional
    /// producers know.
    fn check_modern_committer(
        &self,
        group: &super::state::Group,
        member: &TxnCommitter<'_>,
        entries: &[CommitEntry],
    ) -> Result<(), i16> {
        let outsider = member.generation < 0
            && member.member_id.is_empty()
            && member.group_instance_id.is_none();
        if outsider {
            return Ok(());
        }
        // Version 9: the rule against older OffsetCommit versions is not a transactional one.
        let checked = match (group.consumer.as_deref(), group.streams.as_deref()) {
            (Some(consumer), _) => {
                let manager = self.topic.manager();
                let partitions: Vec<_> = entries
                    .iter()
                    .map(|e| (manager.topic_id(&e.topic), e.partition))
                    .collect();
                super::consumer::offsets::check_commit(
                    consumer,
                    member.member_id,
                    member.generation,
                    9,
                    &partitions,
                )
            }
            (None, Some(streams)) => {
                let partitions: Vec<(&str, i32)> = entries
                    .iter()
                    .map(|e| (e.topic.as_str(), e.partition))
                    .collect();
                super::streams::offsets::check_commit(
                    streams,
                    member.member_id,
                    member.generation,
                    9,
                    &partitions,
                )
            }
            (None, None) => Ok(()),
        };
        checked.map_err(|code| {
            if code == errors::STALE_MEMBER_EPOCH {
                errors::ILLEGAL_GENERATION
            } else {
                code
            }
        })
    }

    /// `__consumer_offsets` (`epoch_bumped`: of a transaction v2): written to that partition, then
    /// the producer's pending offsets in
    /// the partition's groups become committed (COMMIT) or are dropped (ABORT). `Ok(false)` when
    /// the partition does not exist.
    pub fn complete_txn(
        &self,
        partition: i32,
        marker: MarkerRequest,
        epoch_bumped: bool,
    ) -> ferrolog_storage::Result<bool> {
        self.runtime.write(partition, |shard, ctx| {
            if !ctx.append_marker(marker, epoch_bumped)? {
                return Ok(false);
            }
            let commit = marker.kind == MarkerKind::Commit;
            // Every group of the shard is in the partition.
            for group in shard.groups.values_mut() {
                group.end_txn(marker.producer_id, commit);
            }
            Ok(true)
        })
    }
}
