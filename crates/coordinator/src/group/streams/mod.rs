//! Streams groups of Kafka 4's protocol for Kafka Streams (KIP-1071): each member declares the
//! application's topology, the coordinator configures it against the topics that exist (and
//! names the internal topics to create), and assigns tasks — a subtopology's partition — to
//! the members with a sticky assignor, active and standby.
//!
//! Files: [`topology`] (the topology configured against the topics, pure), [`assignor`] (the
//! sticky task assignor, pure).

pub mod assignor;
pub mod reconcile;
pub mod topology;
