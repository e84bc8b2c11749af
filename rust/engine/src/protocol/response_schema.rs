//! A shape check run on every response body before kafka-protocol decodes it.
//!
//! The upstream change that retires it (and `bounded_decode`): a kafka-protocol release whose
//! `Array::decode` / `CompactArray::decode` (src/protocol/types.rs) refuse a count beyond the
//! bytes left and reserve at most a constant before elements decode, as pull request
//! kafka-protocol-rs/kafka-protocol-rs#161 ("Bound decoder pre-allocation to prevent
//! unbounded-allocation abort", open) does. 0.18.0, and the main branch after it, still call
//! `Vec::with_capacity(count)`. #152 and #200 (open) bound the count only, which is not enough:
//! a Metadata response could still reserve 96 bytes (`size_of::<MetadataResponseBroker>()`) per
//! byte of its frame. With that release `Connection::request` decodes with the crate directly;
//! the walk's stricter checks (no bytes after the end, known tags filling their declared size)
//! only keep it and the crate agreeing, and go with it; `fuzz_tests::checked_responses` then
//! checks the crate's decoders alone.
//!
//! kafka-protocol 0.18 sizes each array with `Vec::with_capacity(count)` straight from the
//! count on the wire, before it reads a single element: a few bytes claiming 2^31 elements make
//! it request up to hundreds of GiB, and the allocation failure aborts the process (inside a
//! Connect worker: the whole JVM; panics are caught at the JNI boundary, aborts are not).
//! Strings and byte fields are no danger when decoding from `Bytes`: they are zero-copy slices,
//! checked against the bytes left. Finding the arrays takes the message's schema, so each
//! response the engine lets the crate decode has its schema here, transcribed from the crate's
//! generated decoder for the one version the engine sends.
//!
//! [`decode_response`] first walks the body along that schema without allocating: every array
//! count must fit the bytes left (count × the element's smallest wire size), every string,
//! bytes and tagged-field length too, and the walk must end exactly at the end of the body.
//! Only then does the crate decode it, and each `with_capacity` it makes is the number of
//! elements really present in the frame: memory stays proportional to the response.
//!
//! Why a check before the crate rather than own decoders (as `bounded_decode` does for the hot
//! ShareFetch/ShareGroupHeartbeat path): a schema is a few lines per message, where a decoder
//! building the crate's structs by hand is a few dozen and can silently drop a field. The walk
//! and the crate agree on every byte as long as the schema matches the crate's grammar; the
//! tests check each schema against the crate's encoder with every field and known tagged field
//! set, and fuzz the pair with a counting allocator (`fuzz_tests`).
//!
//! An (api, version) without a schema is refused before decoding: adding a request to the
//! engine means adding its response schema here. Only requests the engine sends have one
//! (ApiVersions, Metadata, FindCoordinator, SASL, ListOffsets); the test tooling's admin and
//! produce requests (`rust/testkit`) decode their responses themselves.

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ApiKey;
use kafka_protocol::protocol::Decodable;

use super::wire;
use crate::error::EngineError;

/// One field of a response, in wire order, named for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field {
    Int16(&'static str),
    Int32(&'static str),
    Int64(&'static str),
    Bool(&'static str),
    Uuid(&'static str),
    /// INT16 length, -1 for null.
    Str(&'static str),
    /// Unsigned varint length + 1, 0 for null.
    CompactStr(&'static str),
    /// Unsigned varint length + 1, 0 for null.
    CompactBytes(&'static str),
    /// INT32 count, -1 for null; each element is the listed fields in order.
    Array(&'static str, &'static [Field]),
    /// Unsigned varint count + 1, 0 for null; each element is the listed fields in order.
    CompactArray(&'static str, &'static [Field]),
    /// A flexible struct's tagged-field section. The listed tags are the ones kafka-protocol
    /// decodes for this version; it reads them straight from the buffer, not from the tag's
    /// declared size, so the walk requires their encoding to fill that size exactly (then both
    /// agree on where the next field starts). Other tags are skipped by their size, as the
    /// crate does.
    Tagged(&'static [(u32, Field)]),
}

use Field::*;

/// A flexible struct without known tagged fields.
const NO_TAGS: Field = Tagged(&[]);

const API_VERSIONS_V3: &[Field] = &[
    Int16("error_code"),
    CompactArray(
        "api_keys",
        &[
            Int16("api_key"),
            Int16("min_version"),
            Int16("max_version"),
            NO_TAGS,
        ],
    ),
    Int32("throttle_time_ms"),
    Tagged(&[
        (
            0,
            CompactArray(
                "supported_features",
                &[
                    CompactStr("name"),
                    Int16("min_version"),
                    Int16("max_version"),
                    NO_TAGS,
                ],
            ),
        ),
        (1, Int64("finalized_features_epoch")),
        (
            2,
            CompactArray(
                "finalized_features",
                &[
                    CompactStr("name"),
                    Int16("max_version_level"),
                    Int16("min_version_level"),
                    NO_TAGS,
                ],
            ),
        ),
        (3, Bool("zk_migration_ready")),
    ]),
];

const METADATA_V12: &[Field] = &[
    Int32("throttle_time_ms"),
    CompactArray(
        "brokers",
        &[
            Int32("node_id"),
            CompactStr("host"),
            Int32("port"),
            CompactStr("rack"),
            NO_TAGS,
        ],
    ),
    CompactStr("cluster_id"),
    Int32("controller_id"),
    CompactArray(
        "topics",
        &[
            Int16("error_code"),
            CompactStr("name"),
            Uuid("topic_id"),
            Bool("is_internal"),
            CompactArray(
                "partitions",
                &[
                    Int16("error_code"),
                    Int32("partition_index"),
                    Int32("leader_id"),
                    Int32("leader_epoch"),
                    CompactArray("replica_nodes", &[Int32("node_id")]),
                    CompactArray("isr_nodes", &[Int32("node_id")]),
                    CompactArray("offline_replicas", &[Int32("node_id")]),
                    NO_TAGS,
                ],
            ),
            Int32("topic_authorized_operations"),
            NO_TAGS,
        ],
    ),
    NO_TAGS,
];

const FIND_COORDINATOR_V4: &[Field] = &[
    Int32("throttle_time_ms"),
    CompactArray(
        "coordinators",
        &[
            CompactStr("key"),
            Int32("node_id"),
            CompactStr("host"),
            Int32("port"),
            Int16("error_code"),
            CompactStr("error_message"),
            NO_TAGS,
        ],
    ),
    NO_TAGS,
];

/// Not flexible: no tagged fields.
const SASL_HANDSHAKE_V1: &[Field] = &[
    Int16("error_code"),
    Array("mechanisms", &[Str("mechanism")]),
];

const SASL_AUTHENTICATE_V2: &[Field] = &[
    Int16("error_code"),
    CompactStr("error_message"),
    CompactBytes("auth_bytes"),
    Int64("session_lifetime_ms"),
    NO_TAGS,
];

/// The fetchers' lag probe (latest offsets of partitions that went quiet).
const LIST_OFFSETS_V7: &[Field] = &[
    Int32("throttle_time_ms"),
    CompactArray(
        "topics",
        &[
            CompactStr("name"),
            CompactArray(
                "partitions",
                &[
                    Int32("partition_index"),
                    Int16("error_code"),
                    Int64("timestamp"),
                    Int64("offset"),
                    Int32("leader_epoch"),
                    NO_TAGS,
                ],
            ),
            NO_TAGS,
        ],
    ),
    NO_TAGS,
];

/// Every (api, version) whose response kafka-protocol may decode, with its schema.
pub(crate) const RESPONSE_SCHEMAS: &[(ApiKey, i16, &[Field])] = &[
    (ApiKey::ApiVersions, 3, API_VERSIONS_V3),
    (ApiKey::Metadata, 12, METADATA_V12),
    (ApiKey::FindCoordinator, 4, FIND_COORDINATOR_V4),
    (ApiKey::SaslHandshake, 1, SASL_HANDSHAKE_V1),
    (ApiKey::SaslAuthenticate, 2, SASL_AUTHENTICATE_V2),
    (ApiKey::ListOffsets, 7, LIST_OFFSETS_V7),
];

fn schema(api_key: ApiKey, version: i16) -> Option<&'static [Field]> {
    RESPONSE_SCHEMAS
        .iter()
        .find(|(key, v, _)| *key == api_key && *v == version)
        .map(|(_, _, fields)| *fields)
}

/// Decodes a response body (after its header) with kafka-protocol, once its shape is known to
/// be honest: see the module comment.
pub fn decode_response<R: Decodable>(
    api_key: ApiKey,
    version: i16,
    body: Bytes,
) -> Result<R, EngineError> {
    check_response(api_key, version, &body)?;
    let mut body = body;
    R::decode(&mut body, version).map_err(|e| {
        EngineError::protocol(format!("decoding {api_key:?} v{version} response: {e}"))
    })
}

/// Walks `body` along the schema of `api_key` v`version`; returns how many tags it skipped as
/// unknown (the tests use this to catch a tag the schema misses).
pub(crate) fn check_response(
    api_key: ApiKey,
    version: i16,
    body: &Bytes,
) -> Result<usize, EngineError> {
    let fields = schema(api_key, version).ok_or_else(|| {
        EngineError::Internal(format!(
            "no response schema for {api_key:?} v{version}: kafka-protocol would size its \
             arrays from unchecked counts (add one in protocol::response_schema)"
        ))
    })?;
    let mut walk = Walk {
        buf: body.clone(),
        unknown_tags: 0,
    };
    let shape_error = |path: Path| {
        let path = path.trim_start_matches(['.', ':', ' ']);
        EngineError::protocol(format!("decoding {api_key:?} v{version} response: {path}"))
    };
    walk.fields(fields).map_err(shape_error)?;
    if walk.buf.has_remaining() {
        return Err(shape_error(format!(
            ": {} bytes after its end",
            walk.buf.remaining()
        )));
    }
    Ok(walk.unknown_tags)
}

/// The fewest bytes an element made of `fields` takes on the wire.
fn min_wire_size(fields: &[Field]) -> u64 {
    fields
        .iter()
        .map(|field| match field {
            Bool(_) => 1,
            Int16(_) | Str(_) => 2,
            Int32(_) | Array(..) => 4,
            Int64(_) => 8,
            Uuid(_) => 16,
            CompactStr(_) | CompactBytes(_) | CompactArray(..) | Tagged(_) => 1,
        })
        .sum()
}

/// Errors are paths with a reason: `topics[2].partitions: claims ... elements ...`, built
/// on the way back up (only on failure, so the walk itself never allocates).
type Path = String;

/// A leaf reason; the field names are prefixed by the callers.
fn reason(e: EngineError) -> Path {
    match e {
        EngineError::Protocol(m) => format!(": {m}"),
        other => format!(": {other}"),
    }
}

struct Walk {
    buf: Bytes,
    unknown_tags: usize,
}

impl Walk {
    fn fields(&mut self, fields: &[Field]) -> Result<(), Path> {
        fields.iter().try_for_each(|field| self.field(field))
    }

    fn field(&mut self, field: &Field) -> Result<(), Path> {
        let buf = &mut self.buf;
        let named = |name: &'static str| move |path: Path| format!(".{name}{path}");
        match *field {
            Bool(name) => wire::get_i8(buf)
                .map(drop)
                .map_err(reason)
                .map_err(named(name)),
            Int16(name) => wire::get_i16(buf)
                .map(drop)
                .map_err(reason)
                .map_err(named(name)),
            Int32(name) => wire::get_i32(buf)
                .map(drop)
                .map_err(reason)
                .map_err(named(name)),
            Int64(name) => wire::get_i64(buf)
                .map(drop)
                .map_err(reason)
                .map_err(named(name)),
            Uuid(name) => wire::get_uuid(buf)
                .map(drop)
                .map_err(reason)
                .map_err(named(name)),
            Str(name) => {
                let len = wire::get_i16(buf).map_err(reason).map_err(named(name))?;
                if len >= 0 {
                    self.skip(len as u64).map_err(named(name))?;
                }
                Ok(())
            }
            CompactStr(name) | CompactBytes(name) => {
                let len = wire::get_unsigned_varint(buf)
                    .map_err(reason)
                    .map_err(named(name))?;
                if len > 0 {
                    self.skip(u64::from(len) - 1).map_err(named(name))?;
                }
                Ok(())
            }
            Array(name, element) => {
                let count = wire::get_i32(buf).map_err(reason).map_err(named(name))?;
                if count < 0 {
                    return Ok(()); // null (-1); the crate refuses other negatives
                }
                self.elements(count as u64, element).map_err(named(name))
            }
            CompactArray(name, element) => {
                let raw = wire::get_unsigned_varint(buf)
                    .map_err(reason)
                    .map_err(named(name))?;
                if raw == 0 {
                    return Ok(()); // null
                }
                self.elements(u64::from(raw) - 1, element)
                    .map_err(named(name))
            }
            Tagged(known) => self.tagged(known),
        }
    }

    fn skip(&mut self, len: u64) -> Result<(), Path> {
        if len > self.buf.remaining() as u64 {
            return Err(format!(
                ": length {len} with {} bytes left",
                self.buf.remaining()
            ));
        }
        self.buf.advance(len as usize);
        Ok(())
    }

    fn elements(&mut self, count: u64, element: &[Field]) -> Result<(), Path> {
        // At least one byte, so that a count is never free (a loop of 2^32 empty elements).
        let least = min_wire_size(element).max(1);
        // Checked up front so that a lying count fails at once, not after a long walk.
        if count.saturating_mul(least) > self.buf.remaining() as u64 {
            return Err(format!(
                ": claims {count} elements of at least {least} bytes with {} bytes left",
                self.buf.remaining()
            ));
        }
        for i in 0..count {
            self.fields(element)
                .map_err(|path| format!("[{i}]{path}"))?;
        }
        Ok(())
    }

    fn tagged(&mut self, known: &[(u32, Field)]) -> Result<(), Path> {
        let count = wire::get_unsigned_varint(&mut self.buf)
            .map_err(reason)
            .map_err(|path| format!(".<tagged fields>{path}"))?;
        for _ in 0..count {
            let header = (|| {
                let tag = wire::get_unsigned_varint(&mut self.buf)?;
                let size = wire::get_unsigned_varint(&mut self.buf)?;
                Ok((tag, size))
            })()
            .map_err(reason)
            .map_err(|path| format!(".<tagged fields>{path}"))?;
            let (tag, size) = header;
            match known.iter().find(|(t, _)| *t == tag) {
                Some((_, field)) => {
                    let before = self.buf.remaining();
                    self.field(field)?;
                    let used = before - self.buf.remaining();
                    if used as u64 != u64::from(size) {
                        return Err(format!(
                            ".<tag {tag}>: declares {size} bytes, its field takes {used}"
                        ));
                    }
                }
                None => {
                    self.unknown_tags += 1;
                    self.skip(u64::from(size))
                        .map_err(|path| format!(".<tag {tag}>{path}"))?;
                }
            }
        }
        Ok(())
    }
}
