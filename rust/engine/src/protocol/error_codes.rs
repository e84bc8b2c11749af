//! The Kafka error codes the engine names, taken from kafka-protocol's `ResponseError` (the
//! protocol's own table of codes and names). What each means to the engine (its kind, whether
//! retrying helps) is decided in `crate::error`.

use kafka_protocol::error::ResponseError;

pub const NONE: i16 = 0;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const LEADER_NOT_AVAILABLE: i16 = ResponseError::LeaderNotAvailable.code();
pub const NOT_LEADER_OR_FOLLOWER: i16 = ResponseError::NotLeaderOrFollower.code();
pub const REQUEST_TIMED_OUT: i16 = ResponseError::RequestTimedOut.code();
pub const NETWORK_EXCEPTION: i16 = ResponseError::NetworkException.code();
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = ResponseError::CoordinatorLoadInProgress.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();
pub const NOT_COORDINATOR: i16 = ResponseError::NotCoordinator.code();
pub const UNKNOWN_MEMBER_ID: i16 = ResponseError::UnknownMemberId.code();
pub const TOPIC_AUTHORIZATION_FAILED: i16 = ResponseError::TopicAuthorizationFailed.code();
pub const GROUP_AUTHORIZATION_FAILED: i16 = ResponseError::GroupAuthorizationFailed.code();
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = ResponseError::ClusterAuthorizationFailed.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const SASL_AUTHENTICATION_FAILED: i16 = ResponseError::SaslAuthenticationFailed.code();
pub const GROUP_ID_NOT_FOUND: i16 = ResponseError::GroupIdNotFound.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const GROUP_MAX_SIZE_REACHED: i16 = ResponseError::GroupMaxSizeReached.code();
pub const UNKNOWN_TOPIC_ID: i16 = ResponseError::UnknownTopicId.code();
pub const FENCED_MEMBER_EPOCH: i16 = ResponseError::FencedMemberEpoch.code();
pub const INVALID_RECORD_STATE: i16 = ResponseError::InvalidRecordState.code();
pub const SHARE_SESSION_NOT_FOUND: i16 = ResponseError::ShareSessionNotFound.code();
pub const INVALID_SHARE_SESSION_EPOCH: i16 = ResponseError::InvalidShareSessionEpoch.code();
pub const SHARE_SESSION_LIMIT_REACHED: i16 = ResponseError::ShareSessionLimitReached.code();

/// The name of `code` as Kafka's own clients print it (`INVALID_RECORD_STATE`, ...), from the
/// protocol table's variant name; `UNKNOWN(<code>)` for a code it does not know.
pub fn name(code: i16) -> String {
    match ResponseError::try_from_code(code) {
        None => "NONE".to_string(),
        Some(ResponseError::Unknown(code)) => format!("UNKNOWN({code})"),
        Some(error) => upper_snake(&error.to_string()),
    }
}

/// `InvalidRecordState` → `INVALID_RECORD_STATE`.
fn upper_snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 8);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_come_from_the_protocol_table() {
        assert_eq!(INVALID_RECORD_STATE, 121);
        assert_eq!(SHARE_SESSION_LIMIT_REACHED, 133);
        assert_eq!(name(INVALID_RECORD_STATE), "INVALID_RECORD_STATE");
        assert_eq!(name(NOT_LEADER_OR_FOLLOWER), "NOT_LEADER_OR_FOLLOWER");
        assert_eq!(name(NONE), "NONE");
        assert_eq!(name(-1), "UNKNOWN_SERVER_ERROR");
        assert_eq!(name(9999), "UNKNOWN(9999)");
    }
}
