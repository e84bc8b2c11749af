//! The Kafka error codes the engine meets, with names, kinds and retriability.

use crate::error::ErrorKind;

pub const NONE: i16 = 0;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const NETWORK_EXCEPTION: i16 = 13;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const INVALID_REQUEST: i16 = 42;
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const FENCED_LEADER_EPOCH: i16 = 74;
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub const UNKNOWN_TOPIC_ID: i16 = 100;
pub const FENCED_MEMBER_EPOCH: i16 = 110;
pub const INVALID_RECORD_STATE: i16 = 121;
pub const SHARE_SESSION_NOT_FOUND: i16 = 122;
pub const INVALID_SHARE_SESSION_EPOCH: i16 = 123;
pub const SHARE_SESSION_LIMIT_REACHED: i16 = 133;

pub fn name(code: i16) -> &'static str {
    match code {
        -1 => "UNKNOWN_SERVER_ERROR",
        0 => "NONE",
        2 => "CORRUPT_MESSAGE",
        3 => "UNKNOWN_TOPIC_OR_PARTITION",
        5 => "LEADER_NOT_AVAILABLE",
        6 => "NOT_LEADER_OR_FOLLOWER",
        7 => "REQUEST_TIMED_OUT",
        13 => "NETWORK_EXCEPTION",
        14 => "COORDINATOR_LOAD_IN_PROGRESS",
        15 => "COORDINATOR_NOT_AVAILABLE",
        16 => "NOT_COORDINATOR",
        24 => "INVALID_GROUP_ID",
        25 => "UNKNOWN_MEMBER_ID",
        29 => "TOPIC_AUTHORIZATION_FAILED",
        30 => "GROUP_AUTHORIZATION_FAILED",
        31 => "CLUSTER_AUTHORIZATION_FAILED",
        33 => "UNSUPPORTED_SASL_MECHANISM",
        34 => "ILLEGAL_SASL_STATE",
        35 => "UNSUPPORTED_VERSION",
        40 => "INVALID_CONFIG",
        42 => "INVALID_REQUEST",
        56 => "KAFKA_STORAGE_ERROR",
        58 => "SASL_AUTHENTICATION_FAILED",
        68 => "NON_EMPTY_GROUP",
        69 => "GROUP_ID_NOT_FOUND",
        74 => "FENCED_LEADER_EPOCH",
        81 => "GROUP_MAX_SIZE_REACHED",
        100 => "UNKNOWN_TOPIC_ID",
        110 => "FENCED_MEMBER_EPOCH",
        121 => "INVALID_RECORD_STATE",
        122 => "SHARE_SESSION_NOT_FOUND",
        123 => "INVALID_SHARE_SESSION_EPOCH",
        124 => "FENCED_STATE_EPOCH",
        133 => "SHARE_SESSION_LIMIT_REACHED",
        _ => "UNKNOWN",
    }
}

pub fn kind(code: i16) -> ErrorKind {
    match code {
        TOPIC_AUTHORIZATION_FAILED | GROUP_AUTHORIZATION_FAILED | CLUSTER_AUTHORIZATION_FAILED => {
            ErrorKind::Authorization
        }
        SASL_AUTHENTICATION_FAILED | 33 | 34 => ErrorKind::Authentication,
        UNSUPPORTED_VERSION => ErrorKind::Unsupported,
        INVALID_REQUEST | 2 => ErrorKind::Protocol,
        40 | 24 => ErrorKind::Config,
        // Transient cluster conditions (leader moves, coordinator loading, ...).
        code if is_retriable(code) => ErrorKind::Connection,
        _ => ErrorKind::Protocol,
    }
}

/// Codes after which retrying the same operation (possibly after a rediscovery) can succeed.
pub fn is_retriable(code: i16) -> bool {
    matches!(
        code,
        -1 | 2
            | UNKNOWN_TOPIC_OR_PARTITION
            | LEADER_NOT_AVAILABLE
            | NOT_LEADER_OR_FOLLOWER
            | REQUEST_TIMED_OUT
            | NETWORK_EXCEPTION
            | COORDINATOR_LOAD_IN_PROGRESS
            | COORDINATOR_NOT_AVAILABLE
            | NOT_COORDINATOR
            | UNKNOWN_MEMBER_ID
            | 56
            | FENCED_LEADER_EPOCH
            | UNKNOWN_TOPIC_ID
            | FENCED_MEMBER_EPOCH
            | SHARE_SESSION_NOT_FOUND
            | INVALID_SHARE_SESSION_EPOCH
            | SHARE_SESSION_LIMIT_REACHED
    )
}
