//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka's broker and
//! controller answer them, so that `kafka-configs --entity-type users` manages SCRAM users.
//!
//! Describing needs DESCRIBE on the cluster, altering ALTER on it. A request may change each
//! user once (one credential, or the deletion of one); the changes that pass Kafka's checks are
//! stored together, and the others answered with Kafka's codes and messages. The client sends a
//! salted password; only the StoredKey and ServerKey made from it are kept.

use std::collections::{BTreeSet, HashMap};

use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::Context;
use crate::authz::Asked;
use crate::errors::CLUSTER_REFUSED;
use crate::errors::{
    DUPLICATE_RESOURCE, NONE, POLICY_VIOLATION, RESOURCE_NOT_FOUND, UNACCEPTABLE_CREDENTIAL,
    UNKNOWN_SERVER_ERROR, UNSUPPORTED_SASL_MECHANISM,
};
use crate::sasl::credentials::{CredentialChange, CredentialChangeError};
use crate::sasl::scram::{MAX_ITERATIONS, MIN_ITERATIONS};
use crate::sasl::{Mechanism, ScramCredential};

/// The longest salt kept. Kafka's tools make salts of at most 26 bytes; Kafka sets no limit.
pub const MAX_SALT_BYTES: usize = 1024;
/// The longest user name kept (Kafka sets no limit): every change rewrites every name.
pub const MAX_USER_BYTES: usize = 1024;

/// The mechanism Kafka's wire code stands for (1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
fn mechanism_of(code: i8) -> Option<Mechanism> {
    match code {
        1 => Some(Mechanism::ScramSha256),
        2 => Some(Mechanism::ScramSha512),
        _ => None,
    }
}

fn code_of(mechanism: Mechanism) -> i8 {
    match mechanism {
        Mechanism::ScramSha256 => 1,
        Mechanism::ScramSha512 => 2,
        Mechanism::Plain => 0,
    }
}

fn text(message: impl Into<String>) -> Option<StrBytes> {
    Some(StrBytes::from_string(message.into()))
}

pub fn describe(
    context: &Context,
    _asked: &Asked<'_>,
    request: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let asked: Vec<String> = request
        .users
        .unwrap_or_default()
        .into_iter()
        .map(|user| user.name.to_string())
        .collect();
    let held = context.credentials.describe();
    // Each user once, in the order first asked about (every user, by name, when none is named);
    // a user named twice is answered DUPLICATE_RESOURCE.
    let mut order: Vec<String> = Vec::new();
    let mut named_twice: HashMap<String, bool> = HashMap::new();
    if asked.is_empty() {
        order.extend(held.keys().cloned());
    } else {
        for user in asked {
            match named_twice.get_mut(&user) {
                Some(twice) => *twice = true,
                None => {
                    named_twice.insert(user.clone(), false);
                    order.push(user);
                }
            }
        }
    }
    let results = order
        .into_iter()
        .map(|user| {
            let result = DescribeUserScramCredentialsResult::default()
                .with_user(StrBytes::from_string(user.clone()))
                .with_error_message(text(""));
            if named_twice.get(&user).copied().unwrap_or(false) {
                return result.with_error_code(DUPLICATE_RESOURCE).with_error_message(text(
                    format!(
                        "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                    ),
                ));
            }
            match held.get(&user) {
                Some(mechanisms) => result.with_credential_infos(
                    mechanisms
                        .iter()
                        .map(|(mechanism, iterations)| {
                            CredentialInfo::default()
                                .with_mechanism(code_of(*mechanism))
                                .with_iterations(*iterations)
                        })
                        .collect(),
                ),
                None => result
                    .with_error_code(RESOURCE_NOT_FOUND)
                    .with_error_message(text(format!(
                        "Attempt to describe a user credential that does not exist: {user}"
                    ))),
            }
        })
        .collect();
    DescribeUserScramCredentialsResponse::default()
        .with_error_message(text(""))
        .with_results(results)
}

/// One user's fate in an AlterUserScramCredentials request.
enum Verdict {
    Change(CredentialChange),
    Refused(i16, String),
}

pub fn alter(
    context: &Context,
    _asked: &Asked<'_>,
    request: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    // Each user's verdict, in the order users first appear (deletions, then upsertions),
    // decided under the credentials' write lock, so that what is checked is what changes.
    let mut verdicts: Vec<(String, Verdict)> = Vec::new();
    let stored = context.credentials.apply(|exists| {
        verdicts = verdicts_of(&request, exists);
        verdicts
            .iter()
            .filter_map(|(_, verdict)| match verdict {
                Verdict::Change(change) => Some(change.clone()),
                Verdict::Refused(..) => None,
            })
            .collect()
    });
    if let Err(error) = &stored {
        tracing::error!(%error, "SCRAM credentials were not changed");
    }
    // Kafka lists deletions, then upsertions, then refusals.
    let mut results: Vec<AlterUserScramCredentialsResult> = Vec::new();
    let mut refusals = Vec::new();
    for delete_first in [true, false] {
        for (user, verdict) in &verdicts {
            match verdict {
                Verdict::Change(change) => {
                    if matches!(change, CredentialChange::Delete { .. }) != delete_first {
                        continue;
                    }
                    let (code, message) = match &stored {
                        Ok(()) => (NONE, None),
                        Err(CredentialChangeError::TooMany) => (
                            POLICY_VIOLATION,
                            Some(CredentialChangeError::TooMany.to_string()),
                        ),
                        Err(error) => (UNKNOWN_SERVER_ERROR, Some(error.to_string())),
                    };
                    results.push(result(user.clone(), code, message));
                }
                Verdict::Refused(code, message) if delete_first => {
                    refusals.push(result(user.clone(), *code, Some(message.clone())));
                }
                Verdict::Refused(..) => {}
            }
        }
    }
    results.extend(refusals);
    AlterUserScramCredentialsResponse::default().with_results(results)
}

/// What Kafka's controller decides for each user of the request: one change per user at most
/// (a user named again is refused DUPLICATE_RESOURCE), each checked as Kafka checks it.
fn verdicts_of(
    request: &AlterUserScramCredentialsRequest,
    exists: &dyn Fn(&str, Mechanism) -> bool,
) -> Vec<(String, Verdict)> {
    let mut verdicts: Vec<(String, Verdict)> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    let deletions = request
        .deletions
        .iter()
        .map(|deletion| (deletion.name.to_string(), deletion.mechanism, None));
    let upsertions = request.upsertions.iter().map(|upsertion| {
        (
            upsertion.name.to_string(),
            upsertion.mechanism,
            Some(upsertion),
        )
    });
    for (user, code, upsertion) in deletions.chain(upsertions) {
        if let Some(&at) = position.get(&user) {
            if matches!(verdicts[at].1, Verdict::Change(_)) {
                verdicts[at].1 = Verdict::Refused(
                    DUPLICATE_RESOURCE,
                    "A user credential cannot be altered twice in the same request".into(),
                );
            }
            continue;
        }
        let verdict = match (checked_user_and_mechanism(&user, code), upsertion) {
            (Err(refusal), _) => refusal,
            (Ok(mechanism), None) if !exists(&user, mechanism) => Verdict::Refused(
                RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist".into(),
            ),
            (Ok(mechanism), None) => Verdict::Change(CredentialChange::Delete {
                user: user.clone(),
                mechanism,
            }),
            (Ok(mechanism), Some(upsertion)) => upsert_verdict(&user, mechanism, upsertion),
        };
        position.insert(user.clone(), verdicts.len());
        verdicts.push((user, verdict));
    }
    verdicts
}

fn upsert_verdict(
    user: &str,
    mechanism: Mechanism,
    upsertion: &ScramCredentialUpsertion,
) -> Verdict {
    if user.len() > MAX_USER_BYTES {
        return Verdict::Refused(
            UNACCEPTABLE_CREDENTIAL,
            format!("A user name longer than {MAX_USER_BYTES} bytes is not kept"),
        );
    }
    if upsertion.iterations < MIN_ITERATIONS {
        return Verdict::Refused(UNACCEPTABLE_CREDENTIAL, "Too few iterations".into());
    }
    if upsertion.iterations > MAX_ITERATIONS {
        return Verdict::Refused(UNACCEPTABLE_CREDENTIAL, "Too many iterations".into());
    }
    if upsertion.salt.len() > MAX_SALT_BYTES {
        return Verdict::Refused(
            UNACCEPTABLE_CREDENTIAL,
            format!("A salt longer than {MAX_SALT_BYTES} bytes is not kept"),
        );
    }
    let Some(hash) = mechanism.scram() else {
        unreachable!("only SCRAM mechanisms have wire codes");
    };
    Verdict::Change(CredentialChange::Upsert {
        user: user.to_owned(),
        mechanism,
        credential: ScramCredential::from_salted_password(
            hash,
            upsertion.salt.to_vec(),
            &upsertion.salted_password,
            upsertion.iterations,
        ),
    })
}

fn checked_user_and_mechanism(user: &str, code: i8) -> Result<Mechanism, Verdict> {
    if user.is_empty() {
        return Err(Verdict::Refused(
            UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty".into(),
        ));
    }
    mechanism_of(code).ok_or_else(|| {
        Verdict::Refused(UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism".into())
    })
}

fn result(user: String, code: i16, message: Option<String>) -> AlterUserScramCredentialsResult {
    AlterUserScramCredentialsResult::default()
        .with_user(StrBytes::from_string(user))
        .with_error_code(code)
        .with_error_message(message.map(StrBytes::from_string))
}

impl crate::refuse::Refuse for DescribeUserScramCredentialsRequest {
    /// Kafka's error answer: the code at the top and once per user asked about, unnamed,
    /// without a message.
    fn refused(&self, _version: i16, code: i16) -> DescribeUserScramCredentialsResponse {
        let asked = self.users.as_deref().unwrap_or_default();
        let results = asked
            .iter()
            .map(|_| {
                DescribeUserScramCredentialsResult::default()
                    .with_error_code(code)
                    .with_error_message(None)
            })
            .collect();
        DescribeUserScramCredentialsResponse::default()
            .with_error_code(code)
            .with_error_message(None)
            .with_results(results)
    }
}

impl crate::refuse::Refuse for AlterUserScramCredentialsRequest {
    /// Kafka's error answer: every user named, once each, in name order.
    fn refused(&self, _version: i16, code: i16) -> AlterUserScramCredentialsResponse {
        let users: BTreeSet<String> = self
            .deletions
            .iter()
            .map(|deletion| deletion.name.to_string())
            .chain(
                self.upsertions
                    .iter()
                    .map(|upsertion| upsertion.name.to_string()),
            )
            .collect();
        AlterUserScramCredentialsResponse::default().with_results(
            users
                .into_iter()
                .map(|user| result(user, code, Some(CLUSTER_REFUSED.into())))
                .collect(),
        )
    }
}

/// The requests the authorization tests probe these APIs with ([`crate::probes`]).
#[cfg(feature = "probes")]
mod probe {
    use bytes::Bytes;
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
    use kafka_protocol::messages::{
        AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
    };

    use crate::probes::{Probed, text};

    impl Probed for DescribeUserScramCredentialsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                UserName::default().with_name(text("probe-user")),
            ]));
            (0, request)
        }
    }

    impl Probed for AlterUserScramCredentialsRequest {
        fn probe(_topic: &str, _group: &str) -> (i16, Self) {
            let request = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                ScramCredentialUpsertion::default()
                    .with_name(text("probe-user"))
                    .with_mechanism(1)
                    .with_iterations(4096)
                    .with_salt(Bytes::from_static(b"probe-salt"))
                    .with_salted_password(Bytes::from_static(&[7; 32])),
            ]);
            (0, request)
        }
    }
}
