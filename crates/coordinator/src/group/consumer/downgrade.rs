//! Members leaving a consumer group, and the online downgrade Kafka 4.4 makes of it when those
//! who stay all speak the classic protocol, under a `group.consumer.migration.policy` that
//! allows downgrades: the group becomes a classic group again, Stable at its group epoch as
//! generation, led by its first member, on the protocol its members prefer among those they
//! all support, each member assigned its target partitions in the consumer protocol (in its
//! subscription's version); then a rebalance starts, which the members hear of through their
//! heartbeats. It is written as the consumer group's tombstones followed by the classic
//! group's record. A consumer group left with no member stays one, empty. A classic static
//! member taking the place of the last consumer-protocol member downgrades the group at its
//! JoinGroup the same way (`downgrade_at_join`).

use ferrolog_protocol::consumer_protocol;
use ferrolog_records::consumer_offsets::OffsetsKey;

use super::MigrationPolicy;
use super::heartbeat::replay_all;
use super::model::ConsumerGroup;
use super::offsets::group_tombstones;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;
use crate::group::state::{Group, GroupState, JoinResult, Member};
use crate::group::{GroupCoordinator, GroupCtx, JoinRequest};

impl GroupCoordinator {
    /// Removes `leaving` from the consumer group of `entry`, downgrading it when Kafka would;
    /// returns whether it was downgraded, or why the records could not be stored.
    pub(crate) fn remove_consumer_members(
        &self,
        entry: &mut Group,
        leaving: &[String],
        ctx: &GroupCtx<'_>,
    ) -> Result<bool, String> {
        let Some(consumer) = entry.consumer.as_deref() else {
            return Ok(false);
        };
        let policy = self.config.consumer.migration;
        if downgrade_allowed(consumer, leaving, policy, self.config.max_size) {
            let mut classic = self.classic_group_of(consumer, leaving, ctx.now_ms);
            let mut records = group_tombstones(consumer);
            records.push((
                OffsetsKey::Group {
                    group: consumer.id.clone(),
                },
                Some(classic.to_value().encode()),
            ));
            ctx.append(&records).map_err(|error| error.to_string())?;
            tracing::info!(group = %classic.id, generation = classic.generation, "consumer group downgraded to a classic group: its members all speak the classic protocol");
            classic.offsets = std::mem::take(&mut entry.offsets);
            classic.pending_txn_offsets = std::mem::take(&mut entry.pending_txn_offsets);
            *entry = classic;
            self.prepare_rebalance(entry, ctx.now_ms);
            entry.check_kind();
            return Ok(true);
        }
        let records = self.removal_records(consumer, leaving);
        ctx.append(&records).map_err(|error| error.to_string())?;
        if let Some(consumer) = entry.consumer.as_deref_mut() {
            replay_all(consumer, &records);
        }
        Ok(false)
    }

    /// A classic static member's JoinGroup that took the place of the group's last
    /// consumer-protocol member (`records` are those of the heartbeat it stands for, computed
    /// without a new target): the group goes back to the classic protocol, as Kafka's does.
    /// With its target at the group epoch, the classic group is Stable at that generation and
    /// the member is answered its epoch, which its SyncGroup then matches; with a rebalance
    /// due, one starts and the member is answered generation 0 (its SyncGroup is refused
    /// ILLEGAL_GENERATION, and it rejoins).
    pub(crate) fn downgrade_at_join(
        &self,
        entry: &mut Group,
        mut records: Vec<OffsetsRecord>,
        member_id: &str,
        request: &JoinRequest,
        ctx: &GroupCtx<'_>,
    ) -> JoinResult {
        let Some(consumer) = entry.consumer.as_deref() else {
            return JoinResult::error(errors::UNKNOWN_SERVER_ERROR, &request.member_id);
        };
        let mut after = consumer.clone();
        replay_all(&mut after, &records);
        let rebalance = after.assignment_epoch < after.group_epoch;
        let epoch = match after.members.get(member_id) {
            Some(member) if !rebalance => member.current.member_epoch,
            _ => 0,
        };
        let mut classic = self.classic_group_of(&after, &[], ctx.now_ms);
        // Kafka converts the group as it stood before this JoinGroup: its epoch then.
        classic.generation = consumer.group_epoch;
        records.extend(group_tombstones(&after));
        records.push((
            OffsetsKey::Group {
                group: after.id.clone(),
            },
            Some(classic.to_value().encode()),
        ));
        if let Err(error) = ctx.append(&records) {
            tracing::warn!(group = %after.id, %error, "storing a downgrade at a JoinGroup failed");
            return JoinResult::error(errors::COORDINATOR_NOT_AVAILABLE, &request.member_id);
        }
        tracing::info!(group = %after.id, "consumer group downgraded to a classic group: a classic static member took the place of its last consumer-protocol member");
        classic.offsets = std::mem::take(&mut entry.offsets);
        classic.pending_txn_offsets = std::mem::take(&mut entry.pending_txn_offsets);
        *entry = classic;
        if rebalance {
            self.prepare_rebalance(entry, ctx.now_ms);
        }
        entry.check_kind();
        JoinResult {
            error: errors::NONE,
            generation: epoch,
            protocol_type: Some("consumer".to_owned()),
            protocol: request.protocols.first().map(|(name, _)| name.clone()),
            leader: String::new(),
            member_id: member_id.to_owned(),
            members: Vec::new(),
            skip_assignment: false,
        }
    }

    /// The classic group the consumer group becomes without `leaving`.
    fn classic_group_of(&self, group: &ConsumerGroup, leaving: &[String], now: i64) -> Group {
        let mut classic = Group::new(&group.id, now);
        classic.protocol_type = Some("consumer".to_owned());
        classic.generation = group.group_epoch;
        for member in group.members.values() {
            let Some(meta) = &member.subscription.classic else {
                continue;
            };
            if leaving.contains(&member.member_id) {
                continue;
            }
            let subscription = &member.subscription;
            classic.members.push(Member {
                member_id: member.member_id.clone(),
                group_instance_id: subscription.instance_id.clone(),
                client_id: subscription.client_id.clone(),
                client_host: subscription.client_host.clone(),
                session_timeout_ms: meta.session_timeout_ms,
                rebalance_timeout_ms: subscription.rebalance_timeout_ms,
                protocols: meta.protocols.clone(),
                assignment: Vec::new(),
                session_deadline_ms: now + i64::from(meta.session_timeout_ms),
                awaiting_join: None,
                awaiting_sync: None,
            });
        }
        classic.leader = classic.members.first().map(|m| m.member_id.clone());
        classic.protocol = classic.select_protocol();
        let protocol = classic.protocol.clone().unwrap_or_default();
        for member in &mut classic.members {
            let partitions = group
                .target
                .get(&member.member_id)
                .map(|target| self.named_partitions(target))
                .unwrap_or_default();
            let version = consumer_protocol::version(&member.metadata_for(&protocol)).unwrap_or(0);
            member.assignment = consumer_protocol::encode_assignment(version, &partitions);
        }
        classic.transition(GroupState::Stable, now);
        classic
    }
}

/// Whether the group goes back to the classic protocol once `leaving` are gone: someone stays,
/// everyone staying speaks the classic protocol, no more than `group.max.size` (`max_size`),
/// and the policy allows it.
fn downgrade_allowed(
    group: &ConsumerGroup,
    leaving: &[String],
    policy: MigrationPolicy,
    max_size: u32,
) -> bool {
    let staying: Vec<_> = group
        .members
        .values()
        .filter(|member| !leaving.contains(&member.member_id))
        .collect();
    !staying.is_empty()
        && staying.len() <= max_size as usize
        && staying
            .iter()
            .all(|member| member.subscription.classic.is_some())
        && matches!(
            policy,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
}
