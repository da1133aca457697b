//! ACLs as Kafka defines them: a resource pattern (type, name, literal or prefixed) and an access
//! entry (principal, host, operation, allow or deny), with Kafka's numeric codes, which travel in
//! CreateAcls, DescribeAcls and DeleteAcls and in the metadata records ACLs are kept as.

use std::fmt;

/// The name of the one cluster resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";
/// The wildcard: a literal resource name matching every name, a host matching every host.
pub const WILDCARD: &str = "*";
/// The principal matching every principal.
pub const ANY_USER: &str = "User:*";
/// The principal of a connection that did not authenticate (a PLAINTEXT listener, TLS without a
/// client certificate), as Kafka names it.
pub const ANONYMOUS: &str = "User:ANONYMOUS";

macro_rules! kafka_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $code:literal => $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl $name {
            /// Every value, in code order.
            pub const ALL_VALUES: &[Self] = &[$(Self::$variant,)*];

            /// Kafka's code on the wire.
            pub fn code(self) -> i8 {
                match self {
                    $(Self::$variant => $code,)*
                }
            }

            /// The value of a Kafka code; `None` for UNKNOWN (0), ANY (1) and codes Kafka does
            /// not define.
            pub fn from_code(code: i8) -> Option<Self> {
                match code {
                    $($code => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// The value Kafka names `text` (`TOPIC`, `READ`, ...).
            pub fn from_text(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self {
                    $(Self::$variant => $text,)*
                })
            }
        }
    };
}

kafka_enum! {
    /// What an ACL is about (Kafka's `ResourceType`).
    ResourceType {
        /// A topic, by name.
        Topic = 2 => "TOPIC",
        /// A consumer group, by id.
        Group = 3 => "GROUP",
        /// The cluster, named [`CLUSTER_NAME`].
        Cluster = 4 => "CLUSTER",
        /// A transactional producer, by `transactional.id`.
        TransactionalId = 5 => "TRANSACTIONAL_ID",
        /// A delegation token.
        DelegationToken = 6 => "DELEGATION_TOKEN",
        /// A user (for delegation tokens).
        User = 7 => "USER",
    }
}

kafka_enum! {
    /// How an ACL's resource name matches (Kafka's `PatternType`, as stored).
    PatternType {
        /// The name itself, or every name when it is [`WILDCARD`].
        Literal = 3 => "LITERAL",
        /// Every name starting with it.
        Prefixed = 4 => "PREFIXED",
    }
}

kafka_enum! {
    /// What a request does to a resource (Kafka's `AclOperation`).
    AclOperation {
        /// Every operation (only in an ACL).
        All = 2 => "ALL",
        /// Fetch, commit offsets, join a group.
        Read = 3 => "READ",
        /// Produce.
        Write = 4 => "WRITE",
        /// Create topics.
        Create = 5 => "CREATE",
        /// Delete topics, records, groups.
        Delete = 6 => "DELETE",
        /// Create partitions, change ACLs.
        Alter = 7 => "ALTER",
        /// Learn that it exists and its metadata.
        Describe = 8 => "DESCRIBE",
        /// Broker-to-broker requests.
        ClusterAction = 9 => "CLUSTER_ACTION",
        /// Read configs.
        DescribeConfigs = 10 => "DESCRIBE_CONFIGS",
        /// Change configs.
        AlterConfigs = 11 => "ALTER_CONFIGS",
        /// Produce as an idempotent producer.
        IdempotentWrite = 12 => "IDEMPOTENT_WRITE",
        /// Create delegation tokens.
        CreateTokens = 13 => "CREATE_TOKENS",
        /// Describe delegation tokens.
        DescribeTokens = 14 => "DESCRIBE_TOKENS",
        /// Two-phase commit of a transactional producer.
        TwoPhaseCommit = 15 => "TWO_PHASE_COMMIT",
    }
}

kafka_enum! {
    /// Whether an ACL allows or denies (Kafka's `AclPermissionType`).
    Permission {
        /// Denies; a matching deny wins over every allow.
        Deny = 2 => "DENY",
        /// Allows.
        Allow = 3 => "ALLOW",
    }
}

impl ResourceType {
    /// The operations that apply to this type, as Kafka lists them for `authorizedOperations`.
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            Self::Topic => &[
                Read,
                Write,
                Create,
                Delete,
                Alter,
                Describe,
                DescribeConfigs,
                AlterConfigs,
            ],
            Self::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            Self::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            Self::TransactionalId => &[Describe, Write, TwoPhaseCommit],
            Self::DelegationToken => &[Describe],
            Self::User => &[CreateTokens, DescribeTokens],
        }
    }
}

/// The resources an ACL covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    /// The type of the resources.
    pub resource_type: ResourceType,
    /// A name, a prefix, or [`WILDCARD`].
    pub name: String,
    /// How `name` matches.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// Whether the resource `name` of this pattern's type falls under it.
    pub fn matches(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(&self.name),
        }
    }
}

/// Who may (or may not) do what, from where.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessEntry {
    /// `Type:name`, e.g. `User:alice`, or [`ANY_USER`].
    pub principal: String,
    /// A client IP address as text, or [`WILDCARD`].
    pub host: String,
    /// The operation, or [`AclOperation::All`].
    pub operation: AclOperation,
    /// Allow or deny.
    pub permission: Permission,
}

/// One ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// The resources it covers.
    pub pattern: ResourcePattern,
    /// What it allows or denies, and to whom.
    pub entry: AccessEntry,
}

impl AclBinding {
    /// Kafka's checks before an ACL is stored, in its order: for the cluster the name
    /// [`CLUSTER_NAME`], a non-empty name, and a principal with a `:` between its type and its
    /// name. The error is Kafka's message.
    pub fn validate(&self) -> Result<(), String> {
        if self.pattern.resource_type == ResourceType::Cluster && self.pattern.name != CLUSTER_NAME
        {
            return Err("The only valid name for the CLUSTER resource is kafka-cluster".to_owned());
        }
        if self.pattern.name.is_empty() {
            return Err("Invalid empty resource name".to_owned());
        }
        if !self.entry.principal.contains(':') {
            return Err(format!(
                "Could not parse principal from `{}` (no colon is present separating the principal type from the principal name)",
                self.entry.principal
            ));
        }
        Ok(())
    }
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {}:{} for {} from {} ({})",
            self.entry.permission,
            self.entry.operation,
            self.pattern.resource_type,
            self.pattern.name,
            self.entry.principal,
            self.entry.host,
            self.pattern.pattern_type
        )
    }
}

/// Which resource patterns a DescribeAcls or DeleteAcls filter selects (Kafka's
/// `ResourcePatternFilter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternFilter {
    /// A type, or `None` for ANY.
    pub resource_type: Option<ResourceType>,
    /// A name, or `None` for any name.
    pub name: Option<String>,
    /// How the filter's name selects patterns.
    pub pattern_type: PatternTypeFilter,
}

/// How a filter's name selects stored patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternTypeFilter {
    /// Patterns of any type whose name equals the filter's (Kafka's ANY, 1).
    Any,
    /// Patterns that would match a resource of the filter's name: the same literal, the literal
    /// wildcard, and every prefix of it (Kafka's MATCH, 2).
    Match,
    /// Patterns of this type whose name equals the filter's (LITERAL 3, PREFIXED 4).
    Exactly(PatternType),
}

impl PatternTypeFilter {
    /// The filter of a Kafka code; `None` for UNKNOWN and codes Kafka does not define.
    pub fn from_code(code: i8) -> Option<Self> {
        match code {
            1 => Some(Self::Any),
            2 => Some(Self::Match),
            other => PatternType::from_code(other).map(Self::Exactly),
        }
    }
}

impl PatternFilter {
    /// Whether the filter selects `pattern`.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self
            .resource_type
            .is_some_and(|resource_type| resource_type != pattern.resource_type)
        {
            return false;
        }
        if let PatternTypeFilter::Exactly(pattern_type) = self.pattern_type
            && pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        match self.pattern_type {
            PatternTypeFilter::Any | PatternTypeFilter::Exactly(_) => *name == pattern.name,
            PatternTypeFilter::Match => pattern.matches(name),
        }
    }
}

/// Which access entries a filter selects (Kafka's `AccessControlEntryFilter`): each field
/// matches exactly, `None` matching anything (wildcards in stored entries are not expanded).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryFilter {
    /// A principal, or `None` for any.
    pub principal: Option<String>,
    /// A host, or `None` for any.
    pub host: Option<String>,
    /// An operation, or `None` for ANY.
    pub operation: Option<AclOperation>,
    /// A permission, or `None` for ANY.
    pub permission: Option<Permission>,
}

impl EntryFilter {
    /// Whether the filter selects `entry`.
    pub fn matches(&self, entry: &AccessEntry) -> bool {
        self.principal
            .as_ref()
            .is_none_or(|principal| *principal == entry.principal)
            && self.host.as_ref().is_none_or(|host| *host == entry.host)
            && self
                .operation
                .is_none_or(|operation| operation == entry.operation)
            && self
                .permission
                .is_none_or(|permission| permission == entry.permission)
    }
}

/// A DescribeAcls or DeleteAcls filter (Kafka's `AclBindingFilter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclFilter {
    /// The patterns it selects.
    pub pattern: PatternFilter,
    /// The entries it selects.
    pub entry: EntryFilter,
}

impl AclFilter {
    /// Whether the filter selects `binding`.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }
}
