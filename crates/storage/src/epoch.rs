//! The three epochs Kafka stamps on what it writes, each its own type, so that one is never
//! passed where another is meant: a [`ProducerEpoch`] (which instance of a producer id wrote a
//! batch), a [`LeaderEpoch`] (which leadership of a partition assigned a batch its offsets) and
//! a [`CoordinatorEpoch`] (which transaction coordinator wrote a marker). Epochs are compared
//! to fence the older side; only a producer's epoch is ever bumped.
//!
//! As with [`crate::offset`], the bytes keep Kafka's integers (a batch header, a marker's
//! value, a producer snapshot entry, a Kafka request): these types are made where such a value
//! enters the producer state, a log or a coordinator, and turned back into integers where it is
//! written.

use std::fmt;

/// A producer epoch (Kafka's `producerEpoch`, an `i16` in every batch header): which instance
/// of an idempotent or transactional producer id wrote a batch. A newer epoch fences the
/// older: its batches and markers are refused. The transaction coordinator bumps it when a
/// producer (re)initialises, and with transactions v2 at every commit or abort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProducerEpoch(i16);

impl ProducerEpoch {
    /// No epoch (Kafka's `NO_PRODUCER_EPOCH`, −1): a producer state entry made by something
    /// other than a batch of its own, or a transactional id not initialised yet.
    pub const NONE: Self = Self(-1);
    /// The largest epoch: one that can no longer be bumped.
    pub const MAX: Self = Self(i16::MAX);

    /// The epoch Kafka writes as `value`.
    pub const fn new(value: i16) -> Self {
        Self(value)
    }

    /// The epoch as Kafka writes it.
    pub const fn value(self) -> i16 {
        self.0
    }

    /// Whether this is [`ProducerEpoch::NONE`].
    pub const fn is_none(self) -> bool {
        self.0 == Self::NONE.0
    }

    /// The epoch after this one, staying at [`ProducerEpoch::MAX`]: a coordinator moves a
    /// producer to a new producer id before its epoch gets there (Kafka's epoch exhaustion).
    pub const fn next(self) -> Self {
        Self(self.0.saturating_add(1))
    }
}

impl fmt::Display for ProducerEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A partition leader epoch (Kafka's `partitionLeaderEpoch`, an `i32` in every batch header):
/// which leadership of the partition assigned a batch its offsets; −1 when none did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LeaderEpoch(i32);

impl LeaderEpoch {
    /// The epoch Kafka writes as `value`.
    pub const fn new(value: i32) -> Self {
        Self(value)
    }

    /// The epoch as Kafka writes it.
    pub const fn value(self) -> i32 {
        self.0
    }
}

impl fmt::Display for LeaderEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A transaction coordinator epoch (Kafka's `coordinatorEpoch`, an `i32` in the value of every
/// COMMIT and ABORT marker): which coordinator of a transactional id wrote the marker. A
/// partition refuses a marker from a coordinator older than the last one its producer heard
/// from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CoordinatorEpoch(i32);

impl CoordinatorEpoch {
    /// No marker yet (−1): what a producer state entry holds before its first marker.
    pub const NONE: Self = Self(-1);

    /// The epoch Kafka writes as `value`.
    pub const fn new(value: i32) -> Self {
        Self(value)
    }

    /// The epoch as Kafka writes it.
    pub const fn value(self) -> i32 {
        self.0
    }
}

impl fmt::Display for CoordinatorEpoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_epochs_order_and_bump_up_to_the_largest() {
        assert!(ProducerEpoch::NONE < ProducerEpoch::new(0));
        assert!(ProducerEpoch::NONE.is_none() && !ProducerEpoch::new(0).is_none());
        assert_eq!(ProducerEpoch::NONE.next(), ProducerEpoch::new(0));
        assert_eq!(ProducerEpoch::new(4).next().value(), 5);
        assert_eq!(ProducerEpoch::MAX.next(), ProducerEpoch::MAX);
        assert_eq!(ProducerEpoch::new(7).to_string(), "7");
    }

    #[test]
    fn leader_and_coordinator_epochs_are_their_integers() {
        assert_eq!(LeaderEpoch::new(3).value(), 3);
        assert_eq!(LeaderEpoch::new(-1).to_string(), "-1");
        assert!(CoordinatorEpoch::NONE < CoordinatorEpoch::new(0));
        assert_eq!(CoordinatorEpoch::new(12).to_string(), "12");
    }
}
