//! Decoding of one magic-v2 record batch, zero-copy over the response buffer: keys, values and
//! headers are spans of it (or of the decompressed buffer). Written here rather than using
//! kafka-protocol's decoder so that header keys stay bytes (no UTF-8 failure on a foreign
//! producer's header), duplicate header keys survive, and no per-record map is allocated.

use std::ops::Range;

use bytes::Bytes;
use kafka_protocol::compression::{self as codec, Decompressor};

use crate::batch::{RecordData, Span, StoredHeader, TimestampType};
use crate::error::EngineError;
use crate::memory::{reserve_one, MemoryCharge, Shortfall};

pub(crate) const HEADER_LEN: usize = 61;
const LENGTH_AT: usize = 8;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const RECORD_COUNT_AT: usize = 57;
const CONTROL_FLAG: i16 = 1 << 5;
const LOG_APPEND_TIME_FLAG: i16 = 1 << 3;

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Total size (offset + length prefix + body) of the batch starting at `data[0]`, if the
/// whole batch is present.
pub(crate) fn complete_batch_len(data: &[u8]) -> Option<usize> {
    if data.len() < LENGTH_AT + 4 {
        return None;
    }
    let body = be_i32(data, LENGTH_AT);
    let total = LENGTH_AT + 4 + usize::try_from(body).ok()?;
    (total <= data.len()).then_some(total)
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchHeader {
    pub base_offset: i64,
    pub last_offset: i64,
    pub attributes: i16,
    base_timestamp: i64,
    max_timestamp: i64,
    record_count: i32,
}

impl BatchHeader {
    pub fn parse(batch: &[u8]) -> Result<BatchHeader, EngineError> {
        if batch.len() < HEADER_LEN {
            return Err(EngineError::protocol(format!(
                "record batch of {} bytes is shorter than its header",
                batch.len()
            )));
        }
        if batch[MAGIC_AT] != 2 {
            return Err(EngineError::protocol(format!(
                "record batch magic {} is not supported",
                batch[MAGIC_AT]
            )));
        }
        let base_offset = be_i64(batch, 0);
        let last_offset = base_offset
            .checked_add(be_i32(batch, LAST_OFFSET_DELTA_AT).into())
            .ok_or_else(|| {
                EngineError::protocol(format!(
                    "record batch at offset {base_offset}: last offset out of range"
                ))
            })?;
        Ok(BatchHeader {
            base_offset,
            last_offset,
            attributes: i16::from_be_bytes([batch[ATTRIBUTES_AT], batch[ATTRIBUTES_AT + 1]]),
            base_timestamp: be_i64(batch, BASE_TIMESTAMP_AT),
            max_timestamp: be_i64(batch, MAX_TIMESTAMP_AT),
            record_count: be_i32(batch, RECORD_COUNT_AT),
        })
    }

    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_FLAG != 0
    }

    fn timestamp_type(&self) -> TimestampType {
        if self.attributes & LOG_APPEND_TIME_FLAG != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
}

/// One record as decoded; the caller attaches topic, partition and lock data. Key, value and
/// headers lie in `RecordData::buffers[buffer]`; the headers are `first..first + count` of
/// `RecordData::headers`.
#[derive(Debug)]
pub(crate) struct DecodedRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: TimestampType,
    pub buffer: u32,
    pub key: Option<Span>,
    pub value: Option<Span>,
    pub headers: (u32, u32),
}

/// Where decoding takes its memory from: a member's [`MemoryCharge`], or a plain cap.
pub(crate) trait Budget {
    /// Takes `n` bytes before they are allocated.
    fn take(&mut self, n: usize) -> Result<(), Shortfall>;

    /// What one batch may still take at most (a buffer grows no further than that).
    fn left(&self) -> usize;
}

impl Budget for MemoryCharge {
    fn take(&mut self, n: usize) -> Result<(), Shortfall> {
        self.charge(n)
    }

    fn left(&self) -> usize {
        self.batch_left()
    }
}

/// At most `cap` bytes in all.
#[cfg(test)]
pub(crate) struct Cap(pub usize);

#[cfg(test)]
impl Budget for Cap {
    fn take(&mut self, n: usize) -> Result<(), Shortfall> {
        self.0 = self.0.checked_sub(n).ok_or(Shortfall::Batch {
            allowance: self.0,
            bound: crate::memory::Bound::Decompressed,
        })?;
        Ok(())
    }

    fn left(&self) -> usize {
        self.0
    }
}

/// Why a record batch was not decoded.
#[derive(Debug)]
pub(crate) enum BatchError {
    /// Its bytes are wrong (CRC, compression, record framing): only this batch is lost.
    Corrupt(EngineError),
    /// Decoding it would pass a memory bound (see `memory`).
    Memory(Shortfall),
}

impl From<EngineError> for BatchError {
    fn from(e: EngineError) -> Self {
        BatchError::Corrupt(e)
    }
}

impl From<Shortfall> for BatchError {
    fn from(s: Shortfall) -> Self {
        BatchError::Memory(s)
    }
}

/// Decompresses a batch body, at most `cap` bytes (tests and fuzzing).
#[cfg(test)]
pub(crate) fn decompress_capped(
    codec_id: i16,
    body: Bytes,
    cap: usize,
) -> Result<Bytes, EngineError> {
    decompress(codec_id, body, &mut Cap(cap)).map_err(|e| match e {
        BatchError::Corrupt(e) => e,
        BatchError::Memory(_) => EngineError::protocol(format!(
            "decompressing a record batch: more than {cap} bytes uncompressed"
        )),
    })
}

/// Decompresses a batch body, taking what its output needs from `budget` as it grows: a stream
/// that expands past it stops there.
pub(crate) fn decompress(
    codec_id: i16,
    mut body: Bytes,
    budget: &mut dyn Budget,
) -> Result<Bytes, BatchError> {
    let corrupt = |e: String| {
        BatchError::Corrupt(EngineError::protocol(format!(
            "decompressing a record batch: {e}"
        )))
    };
    match codec_id {
        0 => Ok(body),
        1 => read_bounded(flate2::read::GzDecoder::new(&body[..]), body.len(), budget),
        2 => {
            // The codec allocates what the block headers declare (bounded at 22× the input by
            // the check), growing one buffer block by block: up to twice that.
            let declared = check_snappy_lengths(&body)?;
            budget.take(declared.saturating_mul(2))?;
            codec::Snappy::decompress(&mut body, |b| Ok(b.split_to(b.len())))
                .map_err(|e| corrupt(e.to_string()))
        }
        3 => {
            let decoder = lz4::Decoder::new(&body[..]).map_err(|e| corrupt(e.to_string()))?;
            read_bounded(decoder, body.len(), budget)
        }
        4 => {
            let decoder =
                zstd::stream::read::Decoder::new(&body[..]).map_err(|e| corrupt(e.to_string()))?;
            read_bounded(decoder, body.len(), budget)
        }
        other => Err(BatchError::Corrupt(EngineError::protocol(format!(
            "unknown compression codec {other}"
        )))),
    }
}

/// Reads a decompressing stream to its end into a buffer that grows only by what `budget`
/// granted first. It grows by half its size each time (not double: what is charged is the
/// buffer's capacity, which so stays within 1.5× what the batch decompresses to), and never
/// past what the budget has left for the batch, so a batch just within its allowance fits.
fn read_bounded(
    mut decoder: impl std::io::Read,
    compressed_len: usize,
    budget: &mut dyn Budget,
) -> Result<Bytes, BatchError> {
    use std::io::Read;
    let corrupt = |e: std::io::Error| {
        BatchError::Corrupt(EngineError::protocol(format!(
            "decompressing a record batch: {e}"
        )))
    };
    // A first guess that avoids most regrowth for typical ratios.
    let first = compressed_len.saturating_mul(4).clamp(4096, 4 << 20);
    let mut out: Vec<u8> = Vec::new();
    let mut next: Option<u8> = None;
    loop {
        // At least a byte: with nothing left the budget refuses it.
        let grow = (out.capacity() / 2).max(first).min(budget.left()).max(1);
        budget.take(grow)?;
        out.reserve_exact(grow);
        out.extend(next.take());
        let room = (out.capacity() - out.len()) as u64;
        // Reads until the granted room is full (`take` ends the stream there: no growth past
        // it) or the stream ends.
        let read = (&mut decoder)
            .take(room)
            .read_to_end(&mut out)
            .map_err(corrupt)?;
        if (read as u64) < room {
            return Ok(Bytes::from(out));
        }
        // Full: grow only if the stream has more.
        let mut one = [0u8];
        if decoder.read(&mut one).map_err(corrupt)? == 0 {
            return Ok(Bytes::from(out));
        }
        next = Some(one[0]);
    }
}

/// kafka-protocol's snappy decoder allocates (and zero-fills) the uncompressed length that a
/// block's header declares before decoding it: a 5-byte header can ask for 4 GiB. A snappy
/// element of 3 bytes expands to at most 64, so a block of n bytes cannot honestly declare more
/// than 22·n; refuse such headers before the codec sees them. The framing (xerial
/// header + length-prefixed blocks, else one raw block) is recognised exactly as that decoder
/// does; malformed framing is left for it to report. Returns the total the blocks declare.
fn check_snappy_lengths(body: &[u8]) -> Result<usize, EngineError> {
    const XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
    const MAX_EXPANSION: usize = 22;
    let check_block = |block: &[u8]| {
        let Some(declared) = snappy_declared_len(block) else {
            return Ok(0);
        };
        if declared > block.len().saturating_mul(MAX_EXPANSION) {
            return Err(EngineError::protocol(format!(
                "snappy block of {} bytes declares {declared} uncompressed bytes",
                block.len()
            )));
        }
        Ok(declared)
    };
    let Some(mut blocks) = body.strip_prefix(XERIAL_HEADER) else {
        return check_block(body);
    };
    let mut total = 0usize;
    while blocks.len() >= 4 {
        let len = u32::from_be_bytes(blocks[..4].try_into().expect("4 bytes")) as usize;
        let Some(block) = blocks[4..].get(..len) else {
            return Ok(total); // truncated block: the codec reports it
        };
        total = total.saturating_add(check_block(block)?);
        blocks = &blocks[4 + len..];
    }
    Ok(total)
}

/// The uncompressed length at the start of a raw snappy block (little-endian base-128 u32).
fn snappy_declared_len(block: &[u8]) -> Option<usize> {
    let mut value: u64 = 0;
    for (i, b) in block.iter().take(5).enumerate() {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value as usize);
        }
    }
    None
}

/// Reads one batch's records; spans count from the start of the buffer that holds them.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Where `buf` starts in its buffer.
    base: usize,
}

impl Cursor<'_> {
    fn short() -> EngineError {
        EngineError::protocol("record batch ends inside a record")
    }

    fn byte(&mut self) -> Result<u8, EngineError> {
        let b = *self.buf.get(self.pos).ok_or_else(Self::short)?;
        self.pos += 1;
        Ok(b)
    }

    /// Zig-zag varint/varlong.
    fn varlong(&mut self) -> Result<i64, EngineError> {
        let mut raw: u64 = 0;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            raw |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(EngineError::protocol("varint longer than 10 bytes"))
    }

    fn span(&mut self, len: usize) -> Result<Span, EngineError> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(Self::short)?;
        // Buffers are below 4 GiB: checked once per batch in `decode_records`.
        let out = Span {
            start: (self.base + self.pos) as u32,
            len: len as u32,
        };
        self.pos = end;
        Ok(out)
    }

    /// Length-prefixed bytes; a negative length is null.
    fn nullable(&mut self) -> Result<Option<Span>, EngineError> {
        let len = self.varlong()?;
        if len < 0 {
            return Ok(None);
        }
        self.span(len as usize).map(Some)
    }
}

/// Checks the CRC of the batch at `range` of `data.buffers[buffer]`, decompresses it (into a
/// buffer added to `data`) and hands each record to `each`, with the charge that pays for what
/// it keeps; headers go to `data.headers`. What the batch keeps (the decompressed buffer, its
/// headers) is charged to `data.memory` before it is allocated. On error `data` is left as it
/// was, its charge too.
pub(crate) fn decode_records(
    data: &mut RecordData,
    buffer: u32,
    range: Range<usize>,
    header: &BatchHeader,
    mut each: impl FnMut(DecodedRecord, &mut MemoryCharge) -> Result<(), Shortfall>,
) -> Result<(), BatchError> {
    let RecordData {
        buffers,
        headers,
        memory,
        ..
    } = data;
    let source = &buffers[buffer as usize];
    if u32::try_from(source.len()).is_err() {
        return Err(EngineError::protocol("records of 4 GiB or more in one response").into());
    }
    let batch = &source[range.clone()];
    let stored_crc = u32::from_be_bytes(batch[CRC_AT..CRC_AT + 4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&batch[ATTRIBUTES_AT..]) != stored_crc {
        return Err(EngineError::protocol(format!(
            "record batch at offset {} fails its CRC check",
            header.base_offset
        ))
        .into());
    }
    let body_start = range.start + HEADER_LEN;
    let (headers_before, headers_capacity, charged) =
        (headers.len(), headers.capacity(), memory.bytes());
    memory.start_batch();
    let result = match header.attributes & 0x7 {
        0 => {
            let body = Cursor {
                buf: &source[body_start..range.end],
                pos: 0,
                base: body_start,
            };
            decode_body(body, buffer, header, headers, memory, &mut each)
        }
        codec_id => match decompress(codec_id, source.slice(body_start..range.end), memory) {
            Ok(body) => {
                let index = buffers.len() as u32;
                let cursor = Cursor {
                    buf: &body,
                    pos: 0,
                    base: 0,
                };
                let decoded = decode_body(cursor, index, header, headers, memory, &mut each);
                if decoded.is_ok() {
                    buffers.push(body);
                }
                decoded
            }
            Err(e) => Err(e),
        },
    };
    if result.is_err() {
        // What the batch allocated is freed (the decompressed buffer is dropped, the headers
        // taken back to where they were), and so is its charge.
        headers.truncate(headers_before);
        headers.shrink_to(headers_capacity);
        memory.give_back_to(charged);
    }
    result
}

fn decode_body(
    mut cur: Cursor<'_>,
    buffer: u32,
    header: &BatchHeader,
    headers: &mut Vec<StoredHeader>,
    memory: &mut MemoryCharge,
    each: &mut impl FnMut(DecodedRecord, &mut MemoryCharge) -> Result<(), Shortfall>,
) -> Result<(), BatchError> {
    let timestamp_type = header.timestamp_type();
    for _ in 0..header.record_count.max(0) {
        let len = cur.varlong()?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| cur.pos.checked_add(l))
            .filter(|e| *e <= cur.buf.len())
            .ok_or_else(Cursor::short)?;
        let _attributes = cur.byte()?;
        let timestamp_delta = cur.varlong()?;
        let offset_delta = cur.varlong()?;
        let key = cur.nullable()?;
        let value = cur.nullable()?;
        let header_count = cur.varlong()?.max(0) as usize;
        let first_header = headers.len();
        for _ in 0..header_count {
            let key_len = cur.varlong()?;
            let key = cur.span(usize::try_from(key_len).map_err(|_| Cursor::short())?)?;
            let value = cur.nullable()?;
            // A header is 2 bytes on the wire at least and 20 here: a flood of them is charged
            // as it grows, not only the bytes it came in.
            reserve_one(headers, memory)?;
            headers.push(StoredHeader { key, value });
        }
        cur.pos = end;
        let out_of_range = |what: &str| {
            EngineError::protocol(format!(
                "record batch at offset {}: record {what} out of range",
                header.base_offset
            ))
        };
        let offset = header
            .base_offset
            .checked_add(offset_delta)
            .ok_or_else(|| out_of_range("offset"))?;
        // Java: under LogAppendTime every record carries the batch's max timestamp.
        let timestamp = match timestamp_type {
            TimestampType::LogAppendTime => header.max_timestamp,
            TimestampType::CreateTime => header
                .base_timestamp
                .checked_add(timestamp_delta)
                .ok_or_else(|| out_of_range("timestamp"))?,
        };
        // A batch holds far fewer than 2^32 headers (each takes at least 2 bytes).
        let headers_span = (first_header as u32, (headers.len() - first_header) as u32);
        each(
            DecodedRecord {
                offset,
                timestamp,
                timestamp_type,
                buffer,
                key,
                value,
                headers: headers_span,
            },
            memory,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::{
        self as kr, Compression, Record, RecordBatchEncoder, RecordEncodeOptions,
    };

    /// One uncompressed batch at base offset 100 whose single record has headers "aa" → "1"
    /// and "bb" → null.
    fn batch(timestamp_type: kr::TimestampType) -> BytesMut {
        let mut headers = IndexMap::new();
        headers.insert(
            StrBytes::from_static_str("aa"),
            Some(Bytes::from_static(b"1")),
        );
        headers.insert(StrBytes::from_static_str("bb"), None);
        let record = Record {
            transactional: false,
            control: false,
            partition_leader_epoch: 0,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type,
            offset: 100,
            sequence: 0,
            timestamp: 5_000,
            key: None,
            value: Some(Bytes::from_static(b"value")),
            headers,
            delete_horizon: false,
        };
        let mut buf = BytesMut::new();
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        RecordBatchEncoder::encode(&mut buf, [&record], &opts).unwrap();
        buf
    }

    fn fix_crc(buf: &mut BytesMut) {
        let crc = crc32c::crc32c(&buf[ATTRIBUTES_AT..]);
        buf[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    }

    fn decode(buf: BytesMut) -> Result<(RecordData, Vec<DecodedRecord>), EngineError> {
        let bytes = buf.freeze();
        let header = BatchHeader::parse(&bytes)?;
        let mut data = RecordData::default();
        let range = 0..bytes.len();
        data.buffers.push(bytes);
        let mut out = Vec::new();
        decode_records(&mut data, 0, range, &header, |r, _| {
            out.push(r);
            Ok(())
        })
        .map_err(|e| match e {
            BatchError::Corrupt(e) => e,
            BatchError::Memory(s) => EngineError::protocol(s.to_string()),
        })?;
        Ok((data, out))
    }

    #[test]
    fn keeps_duplicate_and_non_utf8_header_keys() {
        let mut buf = batch(kr::TimestampType::Creation);
        let find = |buf: &BytesMut, what: &[u8]| {
            HEADER_LEN
                + buf[HEADER_LEN..]
                    .windows(2)
                    .position(|w| w == what)
                    .unwrap()
        };
        let (aa, bb) = (find(&buf, b"aa"), find(&buf, b"bb"));
        buf[bb..bb + 2].copy_from_slice(b"aa"); // duplicate key
        buf[aa..aa + 2].copy_from_slice(&[0xff, 0xfe]); // not UTF-8
        fix_crc(&mut buf);
        let (data, records) = decode(buf).unwrap();
        let r = &records[0];
        let buffer = &data.buffers[r.buffer as usize];
        let (first, count) = r.headers;
        let h = &data.headers[first as usize..(first + count) as usize];
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].key.of(buffer), &[0xff, 0xfe]);
        assert_eq!(h[0].value.map(|v| v.of(buffer)), Some(&b"1"[..]));
        assert_eq!(h[1].key.of(buffer), b"aa");
        assert_eq!(h[1].value, None);
        assert_eq!(r.value.map(|v| v.of(buffer)), Some(&b"value"[..]));
        assert_eq!(r.offset, 100);
        assert_eq!(r.timestamp, 5_000);
        assert_eq!(r.key, None);
    }

    #[test]
    fn log_append_time_uses_the_batch_max_timestamp() {
        let mut buf = batch(kr::TimestampType::LogAppend);
        // kafka-protocol's encoder does not set the flag itself.
        buf[ATTRIBUTES_AT + 1] |= LOG_APPEND_TIME_FLAG as u8;
        buf[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&9_999i64.to_be_bytes());
        fix_crc(&mut buf);
        let r = &decode(buf).unwrap().1[0];
        assert_eq!(r.timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(r.timestamp, 9_999);
    }

    #[test]
    fn corrupt_batches_fail_the_crc_check() {
        let mut buf = batch(kr::TimestampType::Creation);
        let last = buf.len() - 1;
        buf[last] ^= 0xff;
        assert!(decode(buf).unwrap_err().to_string().contains("CRC"));
    }
}
