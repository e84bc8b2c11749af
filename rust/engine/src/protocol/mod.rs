//! Wire-level pieces the engine adds on top of kafka-protocol: error codes, compact-format
//! primitives and the ShareFetch/ShareAcknowledge v1+v2 codecs.

pub mod bounded_decode;
pub mod error_codes;
pub mod share_requests;
pub mod wire;
