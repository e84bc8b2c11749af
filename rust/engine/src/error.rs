//! Engine errors: one typed enum, with a stable [`ErrorKind`] the JNI layer maps to Java
//! exception types, and a retriable/fatal split.

use std::time::Duration;

use kafka_protocol::error::ResponseError;

use crate::memory::{MEMBER_BOUND_KEY, WORKER_BOUND_PROPERTY};
use crate::protocol::error_codes;

/// Stable classification of an [`EngineError`]; the JNI layer maps it to a Java exception type
/// (`EngineException.Kind`). What crosses the JNI boundary is the [`ErrorKind::name`], never a
/// number: renaming a kind breaks the contract, reordering does not. Broker error codes map onto
/// these kinds; `is_retriable()` is finer-grained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Config,
    Connection,
    Authentication,
    Authorization,
    Unsupported,
    Protocol,
    Timeout,
    Closed,
    Internal,
    /// Input that would pass a memory bound: the member stopped (see `memory`).
    Resource,
}

impl ErrorKind {
    /// Every kind, for the JNI layer's check that Java knows each name.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::Config,
        ErrorKind::Connection,
        ErrorKind::Authentication,
        ErrorKind::Authorization,
        ErrorKind::Unsupported,
        ErrorKind::Protocol,
        ErrorKind::Timeout,
        ErrorKind::Closed,
        ErrorKind::Internal,
        ErrorKind::Resource,
    ];
}

impl ErrorKind {
    /// Stable upper-case name, e.g. for log lines and Java enum lookup.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Config => "CONFIG",
            ErrorKind::Connection => "CONNECTION",
            ErrorKind::Authentication => "AUTHENTICATION",
            ErrorKind::Authorization => "AUTHORIZATION",
            ErrorKind::Unsupported => "UNSUPPORTED",
            ErrorKind::Protocol => "PROTOCOL",
            ErrorKind::Timeout => "TIMEOUT",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::Internal => "INTERNAL",
            ErrorKind::Resource => "RESOURCE",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("invalid configuration `{key}`: {message}")]
    Config { key: String, message: String },

    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },

    #[error("connection to {addr} lost: {reason}")]
    ConnectionLost { addr: String, reason: String },

    #[error("{api} failed with broker error {code} ({name}){}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default(), name = error_codes::name(*code))]
    Broker {
        api: &'static str,
        code: i16,
        message: Option<String>,
    },

    #[error("authentication failed: {0}")]
    Authentication(String),

    #[error("unsupported: {0}")]
    Unsupported(String),

    #[error("protocol error: {0}")]
    Protocol(String),

    #[error("timed out after {after:?}: {what}")]
    Timeout { after: Duration, what: String },

    #[error("consumer is closed")]
    Closed,

    /// One of the member's own tasks (router, membership, a fetcher, the buffer sweeper)
    /// panicked or ended while the member was running; the member has stopped.
    #[error("engine task `{task}` failed: {message}")]
    TaskFailed { task: &'static str, message: String },

    #[error("internal error: {0}")]
    Internal(String),

    /// A record batch that would pass a memory bound on its own: the member stopped and its
    /// records went back to the share group (see `memory`).
    #[error(
        "records of {topic}-{partition} from offset {offset} do not fit in this member's memory: \
         {reason}; the member stopped and released its records, which the share group delivers \
         again (and archives after share.delivery.count.limit deliveries); if such record \
         batches are expected, raise that bound ({MEMBER_BOUND_KEY} for one member, \
         {WORKER_BOUND_PROPERTY} for the worker)"
    )]
    MemoryBound {
        topic: String,
        partition: i32,
        offset: i64,
        reason: String,
    },
}

impl EngineError {
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        EngineError::Config {
            key: key.into(),
            message: message.into(),
        }
    }

    pub fn broker(api: &'static str, code: i16, message: Option<String>) -> Self {
        EngineError::Broker { api, code, message }
    }

    pub fn protocol(message: impl Into<String>) -> Self {
        EngineError::Protocol(message.into())
    }

    pub fn timeout(after: Duration, what: impl Into<String>) -> Self {
        EngineError::Timeout {
            after,
            what: what.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            EngineError::Config { .. } => ErrorKind::Config,
            EngineError::Connect { .. } | EngineError::ConnectionLost { .. } => {
                ErrorKind::Connection
            }
            EngineError::Broker { code, .. } => broker_error_kind(*code),
            EngineError::Authentication(_) => ErrorKind::Authentication,
            EngineError::Unsupported(_) => ErrorKind::Unsupported,
            EngineError::Protocol(_) => ErrorKind::Protocol,
            EngineError::Timeout { .. } => ErrorKind::Timeout,
            EngineError::Closed => ErrorKind::Closed,
            EngineError::Internal(_) | EngineError::TaskFailed { .. } => ErrorKind::Internal,
            EngineError::MemoryBound { .. } => ErrorKind::Resource,
        }
    }

    /// True when the same operation may succeed later without a change of configuration.
    pub fn is_retriable(&self) -> bool {
        match self {
            EngineError::Connect { .. }
            | EngineError::ConnectionLost { .. }
            | EngineError::Timeout { .. } => true,
            EngineError::Broker { code, .. } => broker_error_is_retriable(*code),
            _ => false,
        }
    }

    /// A copy for reporting the same failure to several callers (the io source becomes text).
    pub fn duplicate(&self) -> EngineError {
        match self {
            EngineError::Config { key, message } => {
                EngineError::config(key.clone(), message.clone())
            }
            EngineError::Connect { addr, source } => EngineError::ConnectionLost {
                addr: addr.clone(),
                reason: source.to_string(),
            },
            EngineError::ConnectionLost { addr, reason } => EngineError::ConnectionLost {
                addr: addr.clone(),
                reason: reason.clone(),
            },
            EngineError::Broker { api, code, message } => {
                EngineError::broker(api, *code, message.clone())
            }
            EngineError::Authentication(m) => EngineError::Authentication(m.clone()),
            EngineError::Unsupported(m) => EngineError::Unsupported(m.clone()),
            EngineError::Protocol(m) => EngineError::Protocol(m.clone()),
            EngineError::Timeout { after, what } => EngineError::timeout(*after, what.clone()),
            EngineError::Closed => EngineError::Closed,
            EngineError::Internal(m) => EngineError::Internal(m.clone()),
            EngineError::TaskFailed { task, message } => EngineError::TaskFailed {
                task,
                message: message.clone(),
            },
            EngineError::MemoryBound {
                topic,
                partition,
                offset,
                reason,
            } => EngineError::MemoryBound {
                topic: topic.clone(),
                partition: *partition,
                offset: *offset,
                reason: reason.clone(),
            },
        }
    }

    /// The Kafka error code, when a broker reported this error.
    pub fn broker_code(&self) -> Option<i16> {
        match self {
            EngineError::Broker { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// The kind of a broker error code.
pub(crate) fn broker_error_kind(code: i16) -> ErrorKind {
    use ResponseError as E;
    match ResponseError::try_from_code(code) {
        Some(E::TopicAuthorizationFailed)
        | Some(E::GroupAuthorizationFailed)
        | Some(E::ClusterAuthorizationFailed) => ErrorKind::Authorization,
        Some(E::SaslAuthenticationFailed)
        | Some(E::UnsupportedSaslMechanism)
        | Some(E::IllegalSaslState) => ErrorKind::Authentication,
        Some(E::UnsupportedVersion) => ErrorKind::Unsupported,
        Some(E::InvalidRequest) | Some(E::CorruptMessage) => ErrorKind::Protocol,
        Some(E::InvalidConfig) | Some(E::InvalidGroupId) => ErrorKind::Config,
        // Transient cluster conditions (leader moves, coordinator loading, ...).
        _ if broker_error_is_retriable(code) => ErrorKind::Connection,
        _ => ErrorKind::Protocol,
    }
}

/// Whether retrying the operation can succeed after a broker error code: possibly after a
/// rediscovery (a leader or coordinator moved), a rejoin (the member was fenced) or a new share
/// session. Wider than the protocol's own retriable flag, which knows nothing of rejoins.
pub(crate) fn broker_error_is_retriable(code: i16) -> bool {
    use ResponseError as E;
    matches!(
        ResponseError::try_from_code(code),
        Some(
            E::UnknownServerError
                | E::CorruptMessage
                | E::UnknownTopicOrPartition
                | E::LeaderNotAvailable
                | E::NotLeaderOrFollower
                | E::RequestTimedOut
                | E::NetworkException
                | E::CoordinatorLoadInProgress
                | E::CoordinatorNotAvailable
                | E::NotCoordinator
                | E::UnknownMemberId
                | E::KafkaStorageError
                | E::FencedLeaderEpoch
                | E::UnknownTopicId
                | E::FencedMemberEpoch
                | E::ShareSessionNotFound
                | E::InvalidShareSessionEpoch
                | E::ShareSessionLimitReached
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_retriability() {
        let e = EngineError::broker("ShareFetch", 29, None);
        assert_eq!(e.kind(), ErrorKind::Authorization);
        assert!(!e.is_retriable());
        let e = EngineError::broker("ShareGroupHeartbeat", 15, Some("loading".into()));
        assert!(e.is_retriable());
        assert_eq!(
            e.to_string(),
            "ShareGroupHeartbeat failed with broker error 15 (COORDINATOR_NOT_AVAILABLE): loading"
        );
        assert_eq!(
            EngineError::config("group.id", "missing").kind(),
            ErrorKind::Config
        );
        assert!(EngineError::timeout(Duration::from_secs(1), "x").is_retriable());
        assert!(!EngineError::Closed.is_retriable());
    }
}
