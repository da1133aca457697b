//! Delegation tokens over the SASL listener: created and described at every version served,
//! refused over PLAINTEXT and over a token's own connection, and a token authenticating its
//! owner with SCRAM.

use base64::Engine as _;
use kafka_protocol::messages::create_delegation_token_request::CreatableRenewers;
use kafka_protocol::messages::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, DescribeDelegationTokenRequest,
    DescribeDelegationTokenResponse,
};

use super::*;

const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: i16 = 64;

fn create_request() -> CreateDelegationTokenRequest {
    CreateDelegationTokenRequest::default()
        .with_renewers(vec![
            CreatableRenewers::default()
                .with_principal_type(text("User"))
                .with_principal_name(text("bob")),
        ])
        .with_max_lifetime_ms(-1)
}

async fn create(client: &mut Client, version: i16) -> CreateDelegationTokenResponse {
    client
        .send(ApiKey::CreateDelegationToken, version, &create_request())
        .await
}

/// The SCRAM-SHA-256 exchange of a token: its id as the user, its HMAC as the password.
async fn with_token(broker: &SaslBroker, id: &str, hmac: &[u8]) -> (Client, i16) {
    let mut client = Client::connect(broker.sasl_port).await;
    assert_eq!(
        handshake(&mut client, 1, "SCRAM-SHA-256").await.error_code,
        0
    );
    let password = base64::engine::general_purpose::STANDARD.encode(hmac);
    let (mut scram, first) =
        ScramClient::first_with(Sha::Sha256, id, &password, "nonce", ",tokenauth=true");
    let challenge = authenticate(&mut client, &first).await;
    if challenge.error_code != 0 {
        return (client, challenge.error_code);
    }
    let last = scram.finish(&challenge.auth_bytes);
    let done = authenticate(&mut client, &last).await;
    (client, done.error_code)
}

#[tokio::test]
async fn tokens_are_made_at_every_version_and_authenticate_their_owner() {
    let temp = tempfile::tempdir().unwrap();
    let broker = start(temp.path()).await;
    let mut client = alice(&broker).await;
    let mut made = Vec::new();
    for version in 1..=3 {
        let answer = create(&mut client, version).await;
        assert_eq!(answer.error_code, 0, "v{version}");
        assert_eq!(answer.principal_name.as_str(), "alice");
        // The requester is told from version 3, where the field exists.
        let requester = if version >= 3 { "alice" } else { "" };
        assert_eq!(answer.token_requester_principal_name.as_str(), requester);
        assert!(answer.issue_timestamp_ms <= answer.expiry_timestamp_ms);
        assert_eq!(answer.hmac.len(), 64);
        made.push(answer);
    }
    for version in 1..=3 {
        let described: DescribeDelegationTokenResponse = client
            .send(
                ApiKey::DescribeDelegationToken,
                version,
                // No owners named: every token alice may see (an empty list names none).
                &DescribeDelegationTokenRequest::default().with_owners(None),
            )
            .await;
        assert_eq!(described.error_code, 0);
        assert_eq!(described.tokens.len(), 3, "v{version}");
        assert_eq!(
            described.tokens[0].renewers[0].principal_name.as_str(),
            "bob"
        );
    }
    // Not over PLAINTEXT, at any version.
    let mut plaintext = Client::connect(broker.plaintext_port).await;
    for version in 1..=3 {
        let refused = create(&mut plaintext, version).await;
        assert_eq!(refused.error_code, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
        assert_eq!(refused.expiry_timestamp_ms, -1);
    }
    // The token authenticates alice, who may then do what alice may, but not ask for tokens.
    let token = &made[2];
    let (mut as_token, code) = with_token(&broker, token.token_id.as_str(), &token.hmac).await;
    assert_eq!(code, 0);
    assert_eq!(
        create_topic_code(&mut as_token, "made-with-a-token").await,
        0
    );
    let refused = create(&mut as_token, 3).await;
    assert_eq!(refused.error_code, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED);
    // A wrong HMAC does not authenticate.
    let (_, code) = with_token(&broker, token.token_id.as_str(), &[0; 64]).await;
    assert_eq!(code, SASL_AUTHENTICATION_FAILED);
}
