//! Which member a heartbeat speaks for: an existing one (its epoch checked as Kafka checks
//! it), a new one joining, or, for a static instance whose holder is away (epoch -2), a new
//! incarnation taking over its place and assignment.

use super::heartbeat::{ConsumerHeartbeat, HeartbeatAnswer};
use super::model::{ConsumerGroup, ConsumerMember, CurrentAssignment, Partitions};
use super::records;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;

type Refusal = HeartbeatAnswer;

/// A heartbeat's member as found: the member (new, existing, or a static member's new
/// incarnation) and the records that made it so.
pub(super) struct Found {
    pub member: ConsumerMember,
    /// The member before this heartbeat, to tell whether its assignment changed.
    pub before: CurrentAssignment,
    pub records: Vec<OffsetsRecord>,
    /// The target of the member id a static member took over from.
    pub inherited_target: Option<Partitions>,
}

/// The member a heartbeat names: an existing one (its epoch checked), a new one joining, or
/// for a static instance whose holder left for a while, a new incarnation taking its place.
pub(super) fn find_member(
    group: &ConsumerGroup,
    request: &ConsumerHeartbeat,
) -> Result<Found, Refusal> {
    let group_id = &request.group_id;
    let found = |member: &ConsumerMember| Found {
        before: member.current.clone(),
        member: member.clone(),
        records: Vec::new(),
        inherited_target: None,
    };
    let Some(instance) = &request.instance_id else {
        return match group.members.get(&request.member_id) {
            Some(member) => {
                check_epoch(member, request)?;
                Ok(found(member))
            }
            None if request.member_epoch == 0 => Ok(found(&new_member(&request.member_id))),
            None => Err(Refusal::error(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {group_id}.",
                    request.member_id
                ),
            )),
        };
    };
    let holder = group
        .static_members
        .get(instance)
        .and_then(|id| group.members.get(id));
    if request.member_epoch == 0 {
        return match holder {
            None => Ok(found(&new_member(&request.member_id))),
            // A classic member naming its own id is that member, whatever its epoch: Kafka
            // replaces a static member only for a JoinGroup without a member id.
            Some(holder) if request.classic.is_some() && holder.member_id == request.member_id => {
                Ok(found(holder))
            }
            // Kafka checks that the holder let go only between members of the consumer
            // protocol: a classic member on either side takes over at once.
            Some(holder)
                if holder.current.member_epoch != -2
                    && request.classic.is_none()
                    && holder.subscription.classic.is_none() =>
            {
                Err(Refusal::error(
                    errors::UNRELEASED_INSTANCE_ID,
                    format!(
                        "Static member {} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                        request.member_id, holder.member_id
                    ),
                ))
            }
            Some(holder) => Ok(replace_member(group_id, group, holder, &request.member_id)),
        };
    }
    match holder {
        None => Err(Refusal::error(
            errors::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance} is unknown."),
        )),
        Some(holder) if holder.member_id != request.member_id => Err(Refusal::error(
            errors::FENCED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} was fenced by member {}.",
                request.member_id, holder.member_id
            ),
        )),
        Some(holder) => {
            check_epoch(holder, request)?;
            Ok(found(holder))
        }
    }
}

fn new_member(member_id: &str) -> ConsumerMember {
    ConsumerMember {
        member_id: member_id.to_owned(),
        current: CurrentAssignment {
            member_epoch: 0,
            previous_member_epoch: -1,
            ..CurrentAssignment::default()
        },
        ..ConsumerMember::default()
    }
}

/// A static member back after leaving for a while (epoch -2), under a new member id: the old
/// member's records are removed and the new one starts at epoch 0 with its assignment.
fn replace_member(
    group_id: &str,
    group: &ConsumerGroup,
    old: &ConsumerMember,
    member_id: &str,
) -> Found {
    let mut member = old.clone();
    member.member_id = member_id.to_owned();
    member.current.member_epoch = 0;
    member.current.previous_member_epoch = 0;
    member.current.pending_revocation.clear();
    member.current.zero_assignment_epochs();
    let target = group
        .target
        .get(&old.member_id)
        .cloned()
        .unwrap_or_default();
    let mut records: Vec<OffsetsRecord> =
        records::member_tombstones(group_id, &old.member_id).into();
    records.push(records::member_metadata(
        group_id,
        member_id,
        &member.subscription,
    ));
    records.push(records::target_member(group_id, member_id, &target));
    records.push(records::current_assignment(
        group_id,
        member_id,
        &member.current,
    ));
    Found {
        before: member.current.clone(),
        member,
        records,
        inherited_target: Some(target),
    }
}

/// Kafka's epoch check: a greater epoch than the member's is fenced; a smaller one only passes
/// when it is the member's previous epoch and the member owns no more than it is assigned.
fn check_epoch(member: &ConsumerMember, request: &ConsumerHeartbeat) -> Result<(), Refusal> {
    let received = request.member_epoch;
    let current = member.current.member_epoch;
    if received == 0 || received == current {
        return Ok(());
    }
    let fenced = |word: &str| {
        Err(Refusal::error(
            errors::FENCED_MEMBER_EPOCH,
            format!(
                "The consumer group member has a {word} member epoch ({received}) than the one known by the group coordinator ({current}). The member must abandon all its partitions and rejoin."
            ),
        ))
    };
    if received > current {
        return fenced("greater");
    }
    let owned_within_assignment = request.owned.as_ref().is_some_and(|owned| {
        owned.iter().all(|(topic, partitions)| {
            partitions.iter().all(|p| {
                member
                    .current
                    .assigned
                    .get(topic)
                    .is_some_and(|assigned| assigned.contains_key(p))
            })
        })
    });
    if received == member.current.previous_member_epoch && owned_within_assignment {
        Ok(())
    } else {
        fenced("smaller")
    }
}
