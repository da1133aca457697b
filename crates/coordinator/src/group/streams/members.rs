//! Which member a streams heartbeat speaks for: an existing one (its epoch checked as Kafka
//! checks it), a new one joining, or for a static instance whose holder is away (epoch -2), a
//! new incarnation taking its place and its tasks; and the member's details as the heartbeat
//! updates them.

use ferrolog_records::streams_group_records::StreamsMemberMetadata;

use super::heartbeat::StreamsHeartbeat;
use super::model::{StreamsGroup, StreamsMember};
use super::reconcile::TaskSets;
use super::records;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;

use super::heartbeat::Refusal;

/// A heartbeat's member as found, and the records that made it so.
pub(super) struct Found {
    pub member: StreamsMember,
    pub records: Vec<OffsetsRecord>,
    /// The target of the member id a static member took over from.
    pub inherited_target: Option<TaskSets>,
    /// The member id a static member took over from.
    pub replaced: Option<String>,
}

pub(super) fn find_member(
    group: &StreamsGroup,
    request: &StreamsHeartbeat,
) -> Result<Found, Refusal> {
    let found = |member: &StreamsMember| Found {
        member: member.clone(),
        records: Vec::new(),
        inherited_target: None,
        replaced: None,
    };
    let joining = request.member_epoch == 0;
    let Some(instance) = &request.instance_id else {
        return match group.members.get(&request.member_id) {
            Some(member) => {
                check_epoch(member, request)?;
                Ok(found(member))
            }
            None if joining => Ok(found(&new_member(&request.member_id))),
            None => Err(Refusal::new(
                errors::UNKNOWN_MEMBER_ID,
                format!(
                    "Member {} is not a member of group {}.",
                    request.member_id, group.id
                ),
            )),
        };
    };
    let holder = group
        .static_members
        .get(instance)
        .and_then(|id| group.members.get(id));
    match holder {
        None if joining => Ok(found(&new_member(&request.member_id))),
        None => Err(Refusal::new(
            errors::UNKNOWN_MEMBER_ID,
            format!("Instance id {instance} is unknown."),
        )),
        Some(holder) if joining && holder.current.member_epoch != -2 => Err(Refusal::new(
            errors::UNRELEASED_INSTANCE_ID,
            format!(
                "Static member {} with instance id {instance} cannot join the group because the instance id is owned by {} member.",
                request.member_id, holder.member_id
            ),
        )),
        Some(holder) if joining => Ok(replace_member(group, holder, &request.member_id)),
        Some(holder) if holder.member_id != request.member_id => Err(Refusal::new(
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

fn new_member(member_id: &str) -> StreamsMember {
    StreamsMember {
        member_id: member_id.to_owned(),
        metadata: StreamsMemberMetadata {
            rebalance_timeout_ms: -1,
            topology_epoch: -1,
            ..StreamsMemberMetadata::default()
        },
        ..StreamsMember::default()
    }
}

/// A static member back under a new member id: the old member's records are removed and the
/// new one starts at epoch 0 with its tasks and target.
fn replace_member(group: &StreamsGroup, old: &StreamsMember, member_id: &str) -> Found {
    let mut member = old.clone();
    member.member_id = member_id.to_owned();
    member.current.member_epoch = 0;
    member.current.previous_member_epoch = 0;
    member.current.pending_revocation = TaskSets::default();
    member
        .current
        .assigned
        .active
        .values_mut()
        .for_each(|epoch| *epoch = 0);
    let target = group
        .target
        .get(&old.member_id)
        .cloned()
        .unwrap_or_default();
    let mut records: Vec<OffsetsRecord> =
        records::member_tombstones(&group.id, &old.member_id).into();
    records.push(records::member_metadata(
        &group.id,
        member_id,
        &member.metadata,
    ));
    records.push(records::target_member(&group.id, member_id, &target));
    records.push(records::current_assignment(
        &group.id,
        member_id,
        &member.current,
    ));
    Found {
        member,
        records,
        inherited_target: Some(target),
        replaced: Some(old.member_id.clone()),
    }
}

/// Kafka's epoch check: a greater epoch is fenced; a smaller one only unless it is the
/// previous epoch and the member owns nothing it was not given.
fn check_epoch(member: &StreamsMember, request: &StreamsHeartbeat) -> Result<(), Refusal> {
    let (received, stored) = (request.member_epoch, member.current.member_epoch);
    if received == 0 || received == stored {
        return Ok(());
    }
    let fenced = |relation: &str| {
        Err(Refusal::new(
            errors::FENCED_MEMBER_EPOCH,
            format!(
                "The streams group member has a {relation} member epoch ({received}) than the one known by the group coordinator ({stored}). The member must abandon all its partitions and rejoin."
            ),
        ))
    };
    if received > stored {
        return fenced("greater");
    }
    let assigned = &member.current.assigned;
    let within = request.owned.as_ref().is_some_and(|owned| {
        owned.active.iter().all(|t| assigned.active.contains_key(t))
            && owned.standby.is_subset(&assigned.standby)
            && owned.warmup.is_subset(&assigned.warmup)
    });
    if received == member.current.previous_member_epoch && within {
        return Ok(());
    }
    fenced("smaller")
}

/// The member's details with the heartbeat's applied (a field not sent is unchanged), and
/// whether the change is one that bumps the group epoch (any change of a dynamic member; of a
/// static one, only its topology epoch, rack, tags or process).
pub(super) fn updated_metadata(
    member: &StreamsMember,
    request: &StreamsHeartbeat,
) -> (StreamsMemberMetadata, bool) {
    let old = &member.metadata;
    let mut updated = old.clone();
    if request.instance_id.is_some() {
        updated.instance_id.clone_from(&request.instance_id);
    }
    if request.rack_id.is_some() {
        updated.rack_id.clone_from(&request.rack_id);
    }
    if request.rebalance_timeout_ms != -1 {
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(topology) = &request.topology {
        updated.topology_epoch = topology.epoch;
    }
    updated.client_id.clone_from(&request.client_id);
    updated.client_host.clone_from(&request.client_host);
    if let Some(process) = &request.process_id {
        updated.process_id.clone_from(process);
    }
    if let Some(tags) = &request.client_tags {
        let mut tags = tags.clone();
        tags.sort();
        updated.client_tags = tags;
    }
    if request.member_epoch == 0 || request.user_endpoint.is_some() {
        updated.user_endpoint.clone_from(&request.user_endpoint);
    }
    let bumps = if request.instance_id.is_some() {
        updated.topology_epoch != old.topology_epoch
            || updated.rack_id != old.rack_id
            || updated.client_tags != old.client_tags
            || updated.process_id != old.process_id
    } else {
        updated != *old
    };
    (updated, bumps)
}
