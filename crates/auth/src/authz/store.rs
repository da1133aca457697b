//! The ACLs, kept across restarts and crashes.
//!
//! Kafka keeps ACLs as records in its metadata log; a single node keeps them in the document
//! `ferrolog-acls` (see the storage crate's `documents`: one copy per online data directory,
//! written atomically, the newest generation winning). The body has one ACL per line, in
//! Kafka's own names, from which `kafka-acls` or CreateAcls can recreate them on a Kafka cluster:
//!
//! ```text
//! TOPIC LITERAL orders User:alice * READ ALLOW
//! GROUP PREFIXED billing- User:bob 10.0.0.7 ALL DENY
//! ```
//!
//! Fields are separated by one space: resource type, pattern type, resource name, principal,
//! host, operation, permission. In the three text fields `%`, space, tab and line breaks are
//! written `%25`, `%20`, `%09`, `%0A` and `%0D`, so any group id or principal fits on its line.
//!
//! Threads: readers take a snapshot (an `Arc` of the current index) and decide without a lock;
//! changes are serialized by the generation's mutex, stored, and only then published.
//!
//! Loading, the copies in several directories and the generations are [`crate::stored`]'s.

use std::collections::HashSet;
use std::sync::Arc;

use ferrolog_storage::StorageError;
use ferrolog_storage::manager::LogManager;

use super::acl::{
    AccessEntry, AclBinding, AclFilter, AclOperation, PatternType, Permission, ResourcePattern,
    ResourceType,
};
use super::index::AclIndex;
use crate::stored::{Rollback, StoredDocument, escape, unescape};

/// The document the ACLs are kept in.
pub const ACLS_DOCUMENT: &str = "ferrolog-acls";

/// The most ACLs one CreateAcls request may create, or one DeleteAcls request remove (Kafka's
/// `MAX_RECORDS_PER_USER_OP`).
pub const MAX_PER_REQUEST: usize = 10_000;

/// Why a change of the ACLs was not made.
#[derive(Debug, thiserror::Error)]
pub enum AclChangeError {
    /// The new ACLs could not be stored; nothing changed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The change would take the ACLs past `ferrolog.max.acls`.
    #[error("ferrolog.max.acls is {limit}: {held} ACLs are held and this would make {wanted}")]
    TooMany {
        /// `ferrolog.max.acls`.
        limit: usize,
        /// ACLs held now.
        held: usize,
        /// ACLs there would be.
        wanted: usize,
    },
}

/// The ACLs in force and their stored copy.
#[derive(Debug)]
pub struct AclStore {
    document: StoredDocument,
    current: parking_lot::RwLock<Arc<AclIndex>>,
    /// `ferrolog.max.acls`.
    max_acls: usize,
}

impl AclStore {
    /// Loads the stored ACLs and writes them to every online directory holding an older copy,
    /// so that each holds the newest. A damaged copy, the newest or an older one, stops startup,
    /// naming the file and line: starting without some ACLs could open what they close.
    pub fn open(
        manager: Arc<LogManager>,
        max_acls: usize,
        rollback: Rollback,
    ) -> Result<Self, StorageError> {
        let (document, acls) = StoredDocument::open(manager, ACLS_DOCUMENT, parse, rollback)?;
        Ok(Self {
            document,
            current: parking_lot::RwLock::new(Arc::new(AclIndex::new(acls))),
            max_acls,
        })
    }

    /// The ACLs in force now.
    pub fn snapshot(&self) -> Arc<AclIndex> {
        Arc::clone(&self.current.read())
    }

    /// The ACLs `filter` selects, in stored order.
    pub fn describe(&self, filter: &AclFilter) -> Vec<AclBinding> {
        self.snapshot()
            .all()
            .iter()
            .filter(|binding| filter.matches(binding))
            .cloned()
            .collect()
    }

    /// Adds `bindings` (already validated); one already present is not added twice. Nothing
    /// changes unless the new list was stored.
    pub fn create(&self, bindings: &[AclBinding]) -> Result<(), AclChangeError> {
        self.change(|acls| {
            let mut present: HashSet<AclBinding> = acls.iter().cloned().collect();
            for binding in bindings {
                if present.insert(binding.clone()) {
                    acls.push(binding.clone());
                }
            }
        })
    }

    /// Removes what each filter selects; returns, per filter, the ACLs it removed (an ACL two
    /// filters select is reported under each, as Kafka does), or `None` for a filter that
    /// would take the request past [`MAX_PER_REQUEST`] reported ACLs, which removes nothing.
    /// Nothing changes unless the new list was stored.
    pub fn delete(
        &self,
        filters: &[AclFilter],
    ) -> Result<Vec<Option<Vec<AclBinding>>>, AclChangeError> {
        let mut outcome = Vec::new();
        self.change(|acls| {
            let mut reported = 0usize;
            let mut applied = Vec::new();
            for filter in filters {
                let selected: Vec<AclBinding> = acls
                    .iter()
                    .filter(|binding| filter.matches(binding))
                    .cloned()
                    .collect();
                if reported + selected.len() > MAX_PER_REQUEST {
                    outcome.push(None);
                    continue;
                }
                reported += selected.len();
                applied.push(filter);
                outcome.push(Some(selected));
            }
            acls.retain(|binding| !applied.iter().any(|filter| filter.matches(binding)));
        })?;
        Ok(outcome)
    }

    /// Applies `edit` to a copy of the ACLs, stores the result under a new generation and
    /// publishes it.
    fn change(&self, edit: impl FnOnce(&mut Vec<AclBinding>)) -> Result<(), AclChangeError> {
        let mut change = self.document.change();
        let current = self.snapshot();
        let mut acls = current.all().to_vec();
        edit(&mut acls);
        if acls == current.all() {
            return Ok(());
        }
        if acls.len() > self.max_acls && acls.len() > current.len() {
            return Err(AclChangeError::TooMany {
                limit: self.max_acls,
                held: current.len(),
                wanted: acls.len(),
            });
        }
        change.store(format(&acls))?;
        *self.current.write() = Arc::new(AclIndex::new(acls));
        Ok(())
    }
}

/// The document body for `acls`.
pub fn format(acls: &[AclBinding]) -> String {
    let mut text = String::new();
    for binding in acls {
        let (pattern, entry) = (&binding.pattern, &binding.entry);
        text.push_str(&format!(
            "{} {} {} {} {} {} {}\n",
            pattern.resource_type,
            pattern.pattern_type,
            escape(&pattern.name),
            escape(&entry.principal),
            escape(&entry.host),
            entry.operation,
            entry.permission
        ));
    }
    text
}

/// The ACLs of a document body, or the line (counting from 1) that does not parse and why.
pub fn parse(body: &str) -> Result<Vec<AclBinding>, (usize, String)> {
    let mut acls = Vec::new();
    for (index, line) in body.lines().enumerate() {
        let number = index + 1;
        let fields: Vec<&str> = line.split(' ').collect();
        let [
            resource_type,
            pattern_type,
            name,
            principal,
            host,
            operation,
            permission,
        ] = fields[..]
        else {
            return Err((
                number,
                format!("expected 7 fields separated by spaces, found {line:?}"),
            ));
        };
        let text = |what: &str, text: &str| {
            unescape(text).ok_or_else(|| (number, format!("{text:?}: bad %-escape in the {what}")))
        };
        let binding = AclBinding {
            pattern: ResourcePattern {
                resource_type: known(
                    number,
                    ResourceType::from_text(resource_type),
                    "resource type",
                    resource_type,
                )?,
                name: text("resource name", name)?,
                pattern_type: known(
                    number,
                    PatternType::from_text(pattern_type),
                    "pattern type",
                    pattern_type,
                )?,
            },
            entry: AccessEntry {
                principal: text("principal", principal)?,
                host: text("host", host)?,
                operation: known(
                    number,
                    AclOperation::from_text(operation),
                    "operation",
                    operation,
                )?,
                permission: known(
                    number,
                    Permission::from_text(permission),
                    "permission",
                    permission,
                )?,
            },
        };
        binding.validate().map_err(|reason| (number, reason))?;
        acls.push(binding);
    }
    Ok(acls)
}

fn known<T>(number: usize, value: Option<T>, what: &str, text: &str) -> Result<T, (usize, String)> {
    value.ok_or_else(|| (number, format!("{text:?} is not a {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(name: &str, principal: &str) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Group,
                name: name.to_owned(),
                pattern_type: PatternType::Prefixed,
            },
            entry: AccessEntry {
                principal: principal.to_owned(),
                host: "10.0.0.7".to_owned(),
                operation: AclOperation::All,
                permission: Permission::Deny,
            },
        }
    }

    #[test]
    fn lines_use_kafka_names_and_escape_what_would_break_them() {
        let acls = vec![
            binding("billing-", "User:bob"),
            binding("odd group%\t\r\nid", "User:carol smith"),
        ];
        let text = format(&acls);
        assert_eq!(
            text,
            "GROUP PREFIXED billing- User:bob 10.0.0.7 ALL DENY\n\
             GROUP PREFIXED odd%20group%25%09%0D%0Aid User:carol%20smith 10.0.0.7 ALL DENY\n"
        );
        assert_eq!(parse(&text).unwrap(), acls);
    }

    #[test]
    fn a_bad_line_is_named() {
        let good = format(&[binding("a", "User:a")]);
        for (body, line, reason) in [
            ("TOPIC LITERAL t User:a * READ\n", 1, "7 fields"),
            (
                "TOPIC LITERAL t User:a * READ MAYBE\n",
                1,
                "not a permission",
            ),
            (
                "QUEUE LITERAL t User:a * READ ALLOW\n",
                1,
                "not a resource type",
            ),
            ("TOPIC LITERAL t%2 User:a * READ ALLOW\n", 1, "bad %-escape"),
            ("TOPIC LITERAL t nobody * READ ALLOW\n", 1, "principal"),
            (
                &format!("{good}CLUSTER LITERAL c User:a * ALTER ALLOW\n"),
                2,
                "kafka-cluster",
            ),
        ] {
            let (at, why) = parse(body).unwrap_err();
            assert_eq!(at, line, "{body:?}");
            assert!(why.contains(reason), "{body:?}: {why}");
        }
    }
}
