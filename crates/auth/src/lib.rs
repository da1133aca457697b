//! Who may do what on ferrolog's broker: the listeners a client comes through ([`listener`]),
//! TLS ([`tls`]) and SASL ([`sasl`]: PLAIN and SCRAM, with the SCRAM credentials stored in the
//! data directories) that say who it is, the [`session`] that carries its principal, and Kafka's
//! ACLs and `StandardAuthorizer` ([`authz`]) that decide what it may do, as each API's row of
//! the protocol's API table declares. Documents both keep in the data directories are
//! [`stored`]'s. It builds on the protocol and the storage engine, and knows nothing of the
//! network or the coordinators.

pub mod authz;
pub mod listener;
pub mod quotas;
pub mod sasl;
pub mod session;
pub mod stored;
pub mod tls;
pub mod tokens;

use ferrolog_protocol as protocol;
use ferrolog_protocol::response;
