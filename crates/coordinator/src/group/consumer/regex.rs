//! Regular-expression subscriptions (`SubscribedTopicRegex`): the topics a regex matches in
//! full, among those the subscribing member may describe, kept per group as Kafka's type-16
//! record. Kafka resolves them with RE2/J; ferrolog with the `regex` crate, whose syntax is
//! RE2's (no look-around, no back-references). A regex is resolved when it is new, and again
//! on a heartbeat at least [`REFRESH_MS`] after its last resolution, so new matching topics
//! join the assignment.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ferrolog_records::consumer_offsets::ConsumerRecordType;
use ferrolog_storage::manager::LogManager;

use super::heartbeat::HeartbeatAnswer;
use super::model::{ConsumerGroup, ResolvedRegex, Subscription};
use super::records;
use crate::errors;
use crate::group::offsets_topic::OffsetsRecord;

/// The least time between two resolutions of a regex (Kafka's batch refresh interval).
pub const REFRESH_MS: i64 = 10_000;

/// The group's resolved regexes as this heartbeat leaves them, with the records of any
/// change: `member_id`'s old regex dropped when it was the last to use it, its new (or stale)
/// one resolved.
pub(super) fn resolve<'a>(
    group: &'a ConsumerGroup,
    member_id: &str,
    old: &Subscription,
    new: &Subscription,
    (manager, may_describe): (&LogManager, &dyn Fn(&str) -> bool),
    now: i64,
    records: &mut Vec<OffsetsRecord>,
) -> Result<Cow<'a, BTreeMap<String, ResolvedRegex>>, HeartbeatAnswer> {
    let mut regexes = Cow::Borrowed(&group.regexes);
    if let Some(previous) = &old.topic_regex
        && new.topic_regex.as_ref() != Some(previous)
        && !group.members.values().any(|m| {
            m.member_id != member_id && m.subscription.topic_regex.as_ref() == Some(previous)
        })
        && group.regexes.contains_key(previous)
    {
        records.push(records::tombstone(
            ConsumerRecordType::RegularExpression,
            &group.id,
            previous,
        ));
        regexes.to_mut().remove(previous);
    }
    let Some(regex) = &new.topic_regex else {
        return Ok(regexes);
    };
    let existing = regexes.get(regex);
    if existing.is_some_and(|resolved| now - resolved.timestamp < REFRESH_MS) {
        return Ok(regexes);
    }
    let compiled = ::regex::Regex::new(&format!("^(?:{regex})$")).map_err(|error| {
        HeartbeatAnswer::error(
            errors::INVALID_REGULAR_EXPRESSION,
            format!("SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."),
        )
    })?;
    let topics = manager
        .topics()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| compiled.is_match(name) && may_describe(name))
        .collect();
    if existing.is_some_and(|resolved| resolved.topics == topics) {
        return Ok(regexes);
    }
    let resolved = ResolvedRegex {
        topics,
        version: now,
        timestamp: now,
    };
    records.push(records::regex(&group.id, regex, &resolved));
    regexes.to_mut().insert(regex.clone(), resolved);
    Ok(regexes)
}
