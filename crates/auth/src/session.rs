//! Who is on the other end of a connection, as the authorizer sees them: the principal the
//! connection authenticated as and the client's address; and the listener it came through.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::authz::{ANONYMOUS, Requester};
use crate::listener::Listener;

/// One connection's identity, fixed when it is accepted (and, with SASL, when it authenticates).
#[derive(Clone, Debug)]
pub struct Session {
    principal: String,
    client: SocketAddr,
    host: String,
    listener: Arc<Listener>,
    /// Until when the connection reads no request: a client quota's throttle (KIP-219).
    throttled_until: Arc<parking_lot::Mutex<Option<Instant>>>,
    /// The software the client named in ApiVersions (v3+): its name and version.
    software: Arc<parking_lot::Mutex<Option<(String, String)>>>,
    /// Whether the connection authenticated with a delegation token (which may not ask for
    /// tokens itself).
    token_authenticated: bool,
}

impl Session {
    /// A connection that did not authenticate (a PLAINTEXT listener, or a SASL one before the
    /// exchange): Kafka's `User:ANONYMOUS`.
    pub fn anonymous(client: SocketAddr, listener: Arc<Listener>) -> Self {
        Self::new(ANONYMOUS, client, listener)
    }

    /// A connection authenticated as `principal` (`Type:name`).
    pub fn new(principal: &str, client: SocketAddr, listener: Arc<Listener>) -> Self {
        Self {
            principal: principal.to_owned(),
            client,
            host: host_address(client.ip()),
            listener,
            throttled_until: Arc::default(),
            software: Arc::default(),
            token_authenticated: false,
        }
    }

    /// The same connection authenticated as `principal` (with a delegation token when
    /// `token`): what the client told before it authenticated (its software) is kept.
    pub fn authenticated_as(&self, principal: &str, token: bool) -> Self {
        Self {
            principal: principal.to_owned(),
            software: Arc::clone(&self.software),
            token_authenticated: token,
            ..Self::new(principal, self.client, Arc::clone(&self.listener))
        }
    }

    /// Whether the connection authenticated with a delegation token.
    pub fn token_authenticated(&self) -> bool {
        self.token_authenticated
    }

    /// Records the software the client named (ApiVersions v3+); the latest is kept.
    pub fn set_client_software(&self, name: &str, version: &str) {
        *self.software.lock() = Some((name.to_owned(), version.to_owned()));
    }

    /// The client's software name and version, if it named them.
    pub fn client_software(&self) -> Option<(String, String)> {
        self.software.lock().clone()
    }

    /// Mutes the connection for `ms` from now, as Kafka mutes a throttled client's channel
    /// once its response is sent: the response goes out at once, carrying the throttle time,
    /// and no further request is read until the time is up. A longer throttle already in
    /// force stays.
    pub fn throttle(&self, ms: i64) {
        let Ok(ms) = u64::try_from(ms) else {
            return;
        };
        if ms == 0 {
            return;
        }
        let until = Instant::now() + Duration::from_millis(ms);
        let mut throttled = self.throttled_until.lock();
        if throttled.is_none_or(|current| current < until) {
            *throttled = Some(until);
        }
    }

    /// Until when the connection is muted, if it is now.
    pub fn throttled_until(&self) -> Option<Instant> {
        let mut throttled = self.throttled_until.lock();
        if throttled.is_some_and(|until| until <= Instant::now()) {
            *throttled = None;
        }
        *throttled
    }

    /// The principal's name without its type (`alice` for `User:alice`), which client quotas
    /// name users by.
    pub fn user_name(&self) -> &str {
        self.principal
            .split_once(':')
            .map_or(self.principal.as_str(), |(_, name)| name)
    }

    /// The listener the connection came through: its name, protocol and advertised address.
    pub fn listener(&self) -> &Listener {
        &self.listener
    }

    /// `Type:name`, as ACLs and `super.users` name principals.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The client's socket address.
    pub fn client(&self) -> SocketAddr {
        self.client
    }

    /// The client's IP address as ACL hosts are compared with it.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The principal and host the authorizer decides for.
    pub fn requester(&self) -> Requester<'_> {
        Requester {
            principal: &self.principal,
            host: &self.host,
        }
    }
}

/// The text Kafka compares ACL hosts with: Java's `InetAddress.getHostAddress()`, dotted quads for
/// IPv4 (an IPv4-mapped IPv6 address counts as IPv4, as Java makes it) and eight uncompressed
/// hexadecimal groups for IPv6 (`0:0:0:0:0:0:0:1`, not `::1`).
pub fn host_address(ip: IpAddr) -> String {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => v6
            .segments()
            .iter()
            .map(|group| format!("{group:x}"))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_written_as_java_writes_them() {
        assert_eq!(host_address("127.0.0.1".parse().unwrap()), "127.0.0.1");
        assert_eq!(host_address("::1".parse().unwrap()), "0:0:0:0:0:0:0:1");
        assert_eq!(
            host_address("fe80::a:bc00".parse().unwrap()),
            "fe80:0:0:0:0:0:a:bc00"
        );
        assert_eq!(host_address("::ffff:10.1.2.3".parse().unwrap()), "10.1.2.3");
    }

    #[test]
    fn an_unauthenticated_connection_is_anonymous() {
        let listener = Arc::new(Listener::plaintext("127.0.0.1", 9092));
        let session = Session::anonymous("10.0.0.7:50123".parse().unwrap(), listener);
        assert_eq!(session.principal(), "User:ANONYMOUS");
        assert_eq!(
            session.requester(),
            Requester {
                principal: "User:ANONYMOUS",
                host: "10.0.0.7"
            }
        );
    }
}
