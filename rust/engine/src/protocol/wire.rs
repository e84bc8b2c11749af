//! Primitive encoders/decoders for the flexible ("compact") Kafka wire format, used by the
//! hand-written ShareFetch/ShareAcknowledge v2 codecs that kafka-protocol 0.18 lacks.

use bytes::{Buf, BufMut, Bytes};

use crate::error::EngineError;

pub fn put_unsigned_varint(buf: &mut impl BufMut, mut value: u32) {
    while value >= 0x80 {
        buf.put_u8((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    buf.put_u8(value as u8);
}

/// Compact nullable string: length+1 as unsigned varint, 0 = null.
pub fn put_compact_nullable_str(buf: &mut impl BufMut, value: Option<&str>) {
    match value {
        None => put_unsigned_varint(buf, 0),
        Some(s) => {
            put_unsigned_varint(buf, s.len() as u32 + 1);
            buf.put_slice(s.as_bytes());
        }
    }
}

/// Compact array length: count+1 as unsigned varint.
pub fn put_compact_array_len(buf: &mut impl BufMut, len: usize) {
    put_unsigned_varint(buf, len as u32 + 1);
}

pub fn put_uuid(buf: &mut impl BufMut, id: &uuid::Uuid) {
    buf.put_slice(id.as_bytes());
}

/// An empty tagged-field section.
pub fn put_no_tagged_fields(buf: &mut impl BufMut) {
    buf.put_u8(0);
}

fn short(what: &str) -> EngineError {
    EngineError::protocol(format!("response ends inside {what}"))
}

pub fn get_unsigned_varint(buf: &mut Bytes) -> Result<u32, EngineError> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        if !buf.has_remaining() {
            return Err(short("a varint"));
        }
        let byte = buf.get_u8();
        value |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(EngineError::protocol("varint longer than 5 bytes"))
}

pub fn get_i8(buf: &mut Bytes) -> Result<i8, EngineError> {
    (buf.remaining() >= 1)
        .then(|| buf.get_i8())
        .ok_or_else(|| short("an int8"))
}

pub fn get_i16(buf: &mut Bytes) -> Result<i16, EngineError> {
    (buf.remaining() >= 2)
        .then(|| buf.get_i16())
        .ok_or_else(|| short("an int16"))
}

pub fn get_i32(buf: &mut Bytes) -> Result<i32, EngineError> {
    (buf.remaining() >= 4)
        .then(|| buf.get_i32())
        .ok_or_else(|| short("an int32"))
}

pub fn get_i64(buf: &mut Bytes) -> Result<i64, EngineError> {
    (buf.remaining() >= 8)
        .then(|| buf.get_i64())
        .ok_or_else(|| short("an int64"))
}

pub fn get_uuid(buf: &mut Bytes) -> Result<uuid::Uuid, EngineError> {
    if buf.remaining() < 16 {
        return Err(short("a uuid"));
    }
    let mut raw = [0u8; 16];
    buf.copy_to_slice(&mut raw);
    Ok(uuid::Uuid::from_bytes(raw))
}

pub fn get_compact_nullable_string(buf: &mut Bytes) -> Result<Option<String>, EngineError> {
    let len = get_unsigned_varint(buf)?;
    if len == 0 {
        return Ok(None);
    }
    let len = len as usize - 1;
    if buf.remaining() < len {
        return Err(short("a string"));
    }
    let raw = buf.split_to(len);
    String::from_utf8(raw.to_vec())
        .map(Some)
        .map_err(|_| EngineError::protocol("string is not UTF-8"))
}

/// Returns the element count of a compact array (null reads as empty).
pub fn get_compact_array_len(buf: &mut Bytes) -> Result<usize, EngineError> {
    Ok(get_unsigned_varint(buf)?.saturating_sub(1) as usize)
}

pub fn skip_tagged_fields(buf: &mut Bytes) -> Result<(), EngineError> {
    let count = get_unsigned_varint(buf)?;
    for _ in 0..count {
        let _tag = get_unsigned_varint(buf)?;
        let size = get_unsigned_varint(buf)? as usize;
        if buf.remaining() < size {
            return Err(short("a tagged field"));
        }
        buf.advance(size);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn varint_round_trip() {
        for v in [0u32, 1, 127, 128, 300, 16_383, 16_384, u32::MAX] {
            let mut b = BytesMut::new();
            put_unsigned_varint(&mut b, v);
            let mut b = b.freeze();
            assert_eq!(get_unsigned_varint(&mut b).unwrap(), v);
            assert!(b.is_empty());
        }
    }

    #[test]
    fn strings_round_trip() {
        let mut b = BytesMut::new();
        put_compact_nullable_str(&mut b, Some("group"));
        put_compact_nullable_str(&mut b, None);
        let mut b = b.freeze();
        assert_eq!(
            get_compact_nullable_string(&mut b).unwrap().as_deref(),
            Some("group")
        );
        assert_eq!(get_compact_nullable_string(&mut b).unwrap(), None);
    }
}
