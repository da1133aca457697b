//! CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
//! DescribeDelegationToken, answered as Kafka 4.4 answers them ([`crate::tokens`]), its checks
//! in its order:
//!
//! - a connection that authenticated with a token, a PLAINTEXT one, or an SSL one without a
//!   client certificate may not ask (`DELEGATION_TOKEN_REQUEST_NOT_ALLOWED`);
//! - a token for another owner needs CREATE_TOKENS on that user, and renewers must be users;
//! - without `delegation.token.secret.key`, `DELEGATION_TOKEN_AUTH_DISABLED`;
//! - a token is seen by its owner, requester and renewers, and by those with DESCRIBE on it or
//!   DESCRIBE_TOKENS on its owner.
//!
//! A refusal of the first two kinds carries -1 times, as Kafka's broker writes them; the
//! others 0, as its controller does.

use bytes::Bytes;
use kafka_protocol::messages::describe_delegation_token_response::{
    DescribedDelegationToken, DescribedDelegationTokenRenewer,
};
use kafka_protocol::messages::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse, ExpireDelegationTokenRequest, ExpireDelegationTokenResponse,
    RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};
use kafka_protocol::protocol::StrBytes;

use crate::authz::{AclOperation, Asked, ResourceType};
use crate::listener::SecurityProtocol;
use crate::tokens::{Token, TokenRefusal};
use crate::{Context, errors};

const DELEGATION_TOKEN_AUTH_DISABLED: i16 = 61;
const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: i16 = 64;
const DELEGATION_TOKEN_AUTHORIZATION_FAILED: i16 = 65;
const INVALID_PRINCIPAL_TYPE: i16 = 67;
/// The times of a refusal Kafka's broker writes itself.
const REFUSED_TIME: i64 = -1;

/// Kafka's `allowTokenRequests`.
fn may_ask(asked: &Asked<'_>) -> bool {
    let session = asked.session();
    let protocol = session.listener().protocol;
    !(session.token_authenticated()
        || protocol == SecurityProtocol::Plaintext
        || (protocol == SecurityProtocol::Ssl && session.principal() == "User:ANONYMOUS"))
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

/// `Type:name` as (type, name).
fn parts(principal: &str) -> (StrBytes, StrBytes) {
    let (kind, name) = principal.split_once(':').unwrap_or(("User", principal));
    (text(kind), text(name))
}

fn code_of(refusal: &TokenRefusal) -> i16 {
    match refusal {
        TokenRefusal::Code(code) => *code,
        TokenRefusal::TooMany(_) => errors::POLICY_VIOLATION,
        TokenRefusal::Storage(_) => errors::KAFKA_STORAGE_ERROR,
    }
}

pub fn create(
    context: &Context,
    asked: &Asked<'_>,
    request: CreateDelegationTokenRequest,
) -> CreateDelegationTokenResponse {
    let requester = asked.session().principal().to_owned();
    let owner = match request.owner_principal_name.as_deref() {
        Some(name) if !name.is_empty() => {
            let kind = request.owner_principal_type.as_deref().unwrap_or("User");
            format!("{kind}:{name}")
        }
        _ => requester.clone(),
    };
    let (owner_type, owner_name) = parts(&owner);
    let (requester_type, requester_name) = parts(&requester);
    let answer = CreateDelegationTokenResponse::default()
        .with_principal_type(owner_type)
        .with_principal_name(owner_name);
    // The requester is answered from version 3, where the field exists.
    let answer = if asked.version() >= 3 {
        answer
            .with_token_requester_principal_type(requester_type)
            .with_token_requester_principal_name(requester_name)
    } else {
        answer
    };
    let refused = |code| {
        answer
            .clone()
            .with_error_code(code)
            .with_issue_timestamp_ms(REFUSED_TIME)
            .with_expiry_timestamp_ms(REFUSED_TIME)
            .with_max_timestamp_ms(REFUSED_TIME)
    };
    if !may_ask(asked) {
        return refused(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
    }
    if owner != requester && !asked.may(AclOperation::CreateTokens, ResourceType::User, &owner) {
        return refused(DELEGATION_TOKEN_AUTHORIZATION_FAILED);
    }
    if request
        .renewers
        .iter()
        .any(|renewer| renewer.principal_type.as_str() != "User")
    {
        return refused(INVALID_PRINCIPAL_TYPE);
    }
    if !context.tokens.enabled() {
        return answer.with_error_code(DELEGATION_TOKEN_AUTH_DISABLED);
    }
    let renewers = request
        .renewers
        .iter()
        .map(|renewer| format!("{}:{}", renewer.principal_type, renewer.principal_name))
        .collect();
    let now = context.manager.clock().now_ms();
    match context
        .tokens
        .create((owner, requester, renewers), request.max_lifetime_ms, now)
    {
        Ok(token) => answer
            .with_issue_timestamp_ms(token.issue_ms)
            .with_expiry_timestamp_ms(token.expiry_ms)
            .with_max_timestamp_ms(token.max_ms)
            .with_hmac(Bytes::from(context.tokens.hmac(&token.id)))
            .with_token_id(text(&token.id)),
        Err(refusal) => {
            tracing::warn!(%refusal, "a delegation token was not created");
            answer.with_error_code(code_of(&refusal))
        }
    }
}

/// Renew's and Expire's checks before the token is looked at; `None` to go on.
fn refused_change(context: &Context, asked: &Asked<'_>) -> Option<(i16, i64)> {
    if !may_ask(asked) {
        return Some((DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, REFUSED_TIME));
    }
    (!context.tokens.enabled()).then_some((DELEGATION_TOKEN_AUTH_DISABLED, 0))
}

pub fn renew(
    context: &Context,
    asked: &Asked<'_>,
    request: RenewDelegationTokenRequest,
) -> RenewDelegationTokenResponse {
    let (code, expiry) = refused_change(context, asked).unwrap_or_else(|| {
        let now = context.manager.clock().now_ms();
        let principal = asked.session().principal();
        match context
            .tokens
            .renew(&request.hmac, principal, request.renew_period_ms, now)
        {
            Ok(expiry) => (errors::NONE, expiry),
            Err(refusal) => (code_of(&refusal), 0),
        }
    });
    RenewDelegationTokenResponse::default()
        .with_error_code(code)
        .with_expiry_timestamp_ms(expiry)
}

pub fn expire(
    context: &Context,
    asked: &Asked<'_>,
    request: ExpireDelegationTokenRequest,
) -> ExpireDelegationTokenResponse {
    let (code, expiry) = refused_change(context, asked).unwrap_or_else(|| {
        let now = context.manager.clock().now_ms();
        let principal = asked.session().principal();
        match context
            .tokens
            .expire(&request.hmac, principal, request.expiry_time_period_ms, now)
        {
            Ok(expiry) => (errors::NONE, expiry),
            Err(refusal) => (code_of(&refusal), 0),
        }
    });
    ExpireDelegationTokenResponse::default()
        .with_error_code(code)
        .with_expiry_timestamp_ms(expiry)
}

pub fn describe(
    context: &Context,
    asked: &Asked<'_>,
    request: DescribeDelegationTokenRequest,
) -> DescribeDelegationTokenResponse {
    let answer = DescribeDelegationTokenResponse::default();
    if !may_ask(asked) {
        return answer.with_error_code(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
    }
    if !context.tokens.enabled() {
        return answer.with_error_code(DELEGATION_TOKEN_AUTH_DISABLED);
    }
    let owners: Option<Vec<String>> = request.owners.map(|owners| {
        owners
            .iter()
            .map(|owner| format!("{}:{}", owner.principal_type, owner.principal_name))
            .collect()
    });
    let requester = asked.session().principal();
    let tokens = context
        .tokens
        .all()
        .into_iter()
        .filter(|token| {
            owners
                .as_ref()
                .is_none_or(|owners| owners.iter().any(|owner| token.concerns(owner)))
        })
        .filter(|token| {
            token.concerns(requester)
                || asked.may(
                    AclOperation::Describe,
                    ResourceType::DelegationToken,
                    &token.id,
                )
                || asked.may(
                    AclOperation::DescribeTokens,
                    ResourceType::User,
                    &token.owner,
                )
        })
        .map(|token| described(context, &token, asked.version()))
        .collect();
    answer.with_tokens(tokens)
}

fn described(context: &Context, token: &Token, version: i16) -> DescribedDelegationToken {
    let (owner_type, owner_name) = parts(&token.owner);
    let described = DescribedDelegationToken::default()
        .with_principal_type(owner_type)
        .with_principal_name(owner_name)
        .with_issue_timestamp(token.issue_ms)
        .with_expiry_timestamp(token.expiry_ms)
        .with_max_timestamp(token.max_ms)
        .with_token_id(text(&token.id))
        .with_hmac(Bytes::from(context.tokens.hmac(&token.id)))
        .with_renewers(
            token
                .renewers
                .iter()
                .map(|renewer| {
                    let (kind, name) = parts(renewer);
                    DescribedDelegationTokenRenewer::default()
                        .with_principal_type(kind)
                        .with_principal_name(name)
                })
                .collect(),
        );
    if version > 2 {
        let (kind, name) = parts(&token.requester);
        described
            .with_token_requester_principal_type(kind)
            .with_token_requester_principal_name(name)
    } else {
        described
    }
}
