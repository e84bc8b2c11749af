//! One request on a connection, decoded by kafka-protocol without the engine's shape check (see
//! the crate docs): for requests the engine never sends (admin, produce, transactions) and for
//! tests that drive the protocol by hand.

use bytes::BytesMut;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::{Decodable, Request};
use sharesink_engine::connection::Connection;
use sharesink_engine::EngineError;

/// Sends `request` as `version` on `conn` and decodes its response with kafka-protocol.
pub async fn request<R: Request>(
    conn: &Connection,
    request: &R,
    version: i16,
) -> Result<R::Response, EngineError> {
    let api_key = ApiKey::try_from(R::KEY)
        .map_err(|_| EngineError::Internal(format!("unknown api key {}", R::KEY)))?;
    let mut body = BytesMut::with_capacity(64);
    request
        .encode(&mut body, version)
        .map_err(|e| EngineError::Internal(format!("encoding {api_key:?} v{version}: {e}")))?;
    let mut response = conn.request_raw(api_key, version, &body).await?;
    R::Response::decode(&mut response, version).map_err(|e| {
        EngineError::protocol(format!("decoding {api_key:?} v{version} response: {e}"))
    })
}
