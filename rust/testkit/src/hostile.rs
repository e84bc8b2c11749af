//! Record batches no honest producer writes, for the tests of the engine's memory bounds: a
//! compression bomb (records of zeros that a gzip or zstd batch of a few hundred KiB expands to
//! hundreds of MiB) and a header flood (one record with millions of empty headers, two bytes
//! each on the wire). Both are valid magic-v2 batches that a broker accepts as a producer sent
//! them (`compression.type=producer`). Written here, byte by byte and streamed into the codec,
//! so neither the uncompressed records nor millions of header structs are ever held in memory.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::{BufMut, Bytes, BytesMut};

/// The codecs a hostile batch can use (the ones that expand without bound: snappy is limited
/// to 22× per block, lz4 to about 255×).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BombCodec {
    Gzip,
    Zstd,
}

impl BombCodec {
    fn attributes(self) -> i16 {
        match self {
            BombCodec::Gzip => 1,
            BombCodec::Zstd => 4,
        }
    }
}

/// Zig-zag varint, as record fields are written.
fn varint(out: &mut (impl Write + ?Sized), value: i64) {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.write_all(&[byte]).expect("in-memory write");
            return;
        }
        out.write_all(&[byte | 0x80]).expect("in-memory write");
    }
}

fn varint_len(value: i64) -> usize {
    let mut buf = Vec::with_capacity(10);
    varint(&mut buf, value);
    buf.len()
}

/// Streams the uncompressed records into `codec` and returns the compressed bytes.
fn compress(codec: BombCodec, write: impl FnOnce(&mut dyn Write)) -> Vec<u8> {
    match codec {
        BombCodec::Gzip => {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
            write(&mut encoder);
            encoder.finish().expect("gzip")
        }
        BombCodec::Zstd => {
            let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 19).expect("zstd");
            write(&mut encoder);
            encoder.finish().expect("zstd")
        }
    }
}

/// A complete v2 batch at base offset 0 (the broker assigns the real one) around `body`.
fn batch(codec: BombCodec, record_count: i32, body: &[u8]) -> Bytes {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut after_crc = BytesMut::with_capacity(40 + body.len());
    after_crc.put_i16(codec.attributes());
    after_crc.put_i32(record_count - 1); // last offset delta
    after_crc.put_i64(now); // base timestamp
    after_crc.put_i64(now); // max timestamp
    after_crc.put_i64(-1); // producer id
    after_crc.put_i16(-1); // producer epoch
    after_crc.put_i32(-1); // base sequence
    after_crc.put_i32(record_count);
    after_crc.put_slice(body);
    let mut out = BytesMut::with_capacity(21 + after_crc.len());
    out.put_i64(0); // base offset
    out.put_i32((4 + 1 + 4 + after_crc.len()) as i32); // length after this field
    out.put_i32(-1); // partition leader epoch
    out.put_i8(2); // magic
    out.put_u32(crc32c::crc32c(&after_crc));
    out.put_slice(&after_crc);
    out.freeze()
}

/// `records` records, each with a null key and a value of `value_len` zero bytes, compressed as
/// one batch: `records × value_len` bytes once decompressed.
pub fn compression_bomb(codec: BombCodec, records: usize, value_len: usize) -> Bytes {
    let zeros = vec![0u8; 1 << 20];
    let body = compress(codec, |out| {
        for i in 0..records {
            let mut head = Vec::with_capacity(32);
            head.push(0u8); // attributes
            varint(&mut head, 0); // timestamp delta
            varint(&mut head, i as i64); // offset delta
            varint(&mut head, -1); // null key
            varint(&mut head, value_len as i64);
            let tail_len = varint_len(0); // header count
            let len = head.len() + value_len + tail_len;
            varint(out, len as i64);
            out.write_all(&head).expect("in-memory write");
            let mut left = value_len;
            while left > 0 {
                let n = left.min(zeros.len());
                out.write_all(&zeros[..n]).expect("in-memory write");
                left -= n;
            }
            varint(out, 0); // no headers
        }
    });
    batch(codec, records as i32, &body)
}

/// One record (null key, value `flood`) with `headers` headers, each an empty key and a null
/// value (two bytes on the wire), compressed as one batch.
pub fn header_flood(codec: BombCodec, headers: usize) -> Bytes {
    const HEADER: [u8; 2] = [0x00, 0x01]; // key length 0, value length -1 (null)
    let value = b"flood";
    let mut head = Vec::with_capacity(32);
    head.push(0u8);
    varint(&mut head, 0);
    varint(&mut head, 0);
    varint(&mut head, -1);
    varint(&mut head, value.len() as i64);
    head.extend_from_slice(value);
    varint(&mut head, headers as i64);
    let len = head.len() + headers * HEADER.len();
    let chunk: Vec<u8> = HEADER.iter().copied().cycle().take(1 << 20).collect();
    let body = compress(codec, |out| {
        varint(out, len as i64);
        out.write_all(&head).expect("in-memory write");
        let mut left = headers * HEADER.len();
        while left > 0 {
            let n = left.min(chunk.len());
            out.write_all(&chunk[..n]).expect("in-memory write");
            left -= n;
        }
    });
    batch(codec, 1, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bomb_is_small_and_framed_as_one_batch() {
        for codec in [BombCodec::Gzip, BombCodec::Zstd] {
            let bomb = compression_bomb(codec, 4, 8 << 20); // 32 MiB of zeros
            assert!(bomb.len() < 200 << 10, "{codec:?}: {} bytes", bomb.len());
            let length = i32::from_be_bytes(bomb[8..12].try_into().unwrap()) as usize;
            assert_eq!(length + 12, bomb.len());
            assert_eq!(
                u32::from_be_bytes(bomb[17..21].try_into().unwrap()),
                crc32c::crc32c(&bomb[21..])
            );
            let flood = header_flood(codec, 1 << 20);
            assert!(flood.len() < 100 << 10, "{codec:?}: {} bytes", flood.len());
        }
    }
}
