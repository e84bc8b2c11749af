//! Wire-level pieces the engine adds on top of kafka-protocol: error codes, compact-format
//! primitives, the ShareFetch/ShareAcknowledge v1+v2 codecs, and the response shape check
//! that keeps kafka-protocol's decoders from allocating on a lying count.

pub mod bounded_decode;
pub mod error_codes;
pub mod response_schema;
pub mod share_requests;
pub mod wire;
