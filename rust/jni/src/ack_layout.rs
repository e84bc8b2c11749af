//! The acknowledgement layout: how Java (`io.sharesink.engine.AckLayout`) packs a batch of
//! decisions into a direct buffer for one `acknowledge`/`acknowledgeSync` crossing, and how
//! `acknowledgeSync` writes the per-range results back into the same buffer. Keep this comment
//! and `AckLayout.java` in step; the round-trip tests on both sides check them.
//!
//! Little-endian; positions are byte offsets from the start of the buffer.
//!
//! ```text
//! request
//!    0  i32  topic count t
//!    4  i32  range count n
//!    8  topic table: t entries of  i32 length, UTF-8 bytes
//!   then, from the next multiple of 8: n ranges of 32 bytes
//!      0  i64  first offset     8  i64  last offset (inclusive)
//!     16  i32  topic index     20  i32  partition
//!     24  i8   type (1 ACCEPT, 2 RELEASE, 3 REJECT, 4 RENEW)   25  7 bytes reserved
//! results (acknowledgeSync only, written from 0 over the request, one per range, in order)
//!    i16 Kafka error code (0 = applied), i16 reserved, i32 message length (-1 = none), UTF-8
//!    message bytes. Messages are cut short (at a character boundary) to fit the buffer; the
//!    codes always fit, since a range takes 32 bytes and a result without message 8.
//! ```

use std::sync::Arc;

use sharesink_engine::{Ack, AckKind, AckResult};

use crate::error::Error;

pub(crate) const RANGE_BYTES: usize = 32;
pub(crate) const RESULT_FIXED_BYTES: usize = 8;

fn i32_at(b: &[u8], at: usize) -> Result<i32, Error> {
    b.get(at..at + 4)
        .map(|s| i32::from_le_bytes(s.try_into().expect("4 bytes")))
        .ok_or_else(|| truncated(at))
}

fn i64_at(b: &[u8], at: usize) -> Result<i64, Error> {
    b.get(at..at + 8)
        .map(|s| i64::from_le_bytes(s.try_into().expect("8 bytes")))
        .ok_or_else(|| truncated(at))
}

fn truncated(at: usize) -> Error {
    Error::InvalidArgument(format!(
        "acknowledgement buffer ends before byte {at}: not written by AckLayout"
    ))
}

fn count(value: i32, what: &str) -> Result<usize, Error> {
    usize::try_from(value).map_err(|_| Error::InvalidArgument(format!("{what} is {value}")))
}

/// Reads the ranges of a request (see the module comment) from its first `length` bytes.
pub(crate) fn read_acks(buf: &[u8]) -> Result<Vec<Ack>, Error> {
    let topic_count = count(i32_at(buf, 0)?, "topic count")?;
    let range_count = count(i32_at(buf, 4)?, "range count")?;
    let mut topics: Vec<Arc<str>> = Vec::with_capacity(topic_count);
    let mut pos = 8;
    for _ in 0..topic_count {
        let len = count(i32_at(buf, pos)?, "topic name length")?;
        let bytes = buf
            .get(pos + 4..pos + 4 + len)
            .ok_or_else(|| truncated(pos + 4 + len))?;
        let name = std::str::from_utf8(bytes)
            .map_err(|_| Error::InvalidArgument("topic name is not UTF-8".into()))?;
        topics.push(Arc::from(name));
        pos += 4 + len;
    }
    let mut at = (pos + 7) & !7;
    let mut acks = Vec::with_capacity(range_count);
    for _ in 0..range_count {
        let first = i64_at(buf, at)?;
        let last = i64_at(buf, at + 8)?;
        let topic_index = count(i32_at(buf, at + 16)?, "topic index")?;
        let partition = i32_at(buf, at + 20)?;
        let code = *buf.get(at + 24).ok_or_else(|| truncated(at + 24))? as i8;
        let topic = topics.get(topic_index).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "topic index {topic_index} outside a table of {topic_count}"
            ))
        })?;
        let kind = AckKind::from_code(code).ok_or_else(|| {
            Error::InvalidArgument(format!("acknowledgement type {code} is not 1-4"))
        })?;
        if first > last {
            return Err(Error::InvalidArgument(format!(
                "range {first}-{last} of {topic}-{partition} is empty"
            )));
        }
        acks.push(Ack::new(topic.clone(), partition, first, last, kind));
        at += RANGE_BYTES;
    }
    Ok(acks)
}

/// Writes results (see the module comment) into `out`; returns how many were written.
pub(crate) fn write_results(results: &[AckResult], out: &mut [u8]) -> usize {
    // Room for messages: whatever the fixed parts leave, shared in order.
    let fixed = results.len() * RESULT_FIXED_BYTES;
    if fixed > out.len() {
        return 0;
    }
    let mut spare = out.len() - fixed;
    let mut pos = 0;
    for r in results {
        out[pos..pos + 2].copy_from_slice(&r.error_code.to_le_bytes());
        out[pos + 2..pos + 4].fill(0);
        match &r.error_message {
            None => {
                out[pos + 4..pos + 8].copy_from_slice(&(-1i32).to_le_bytes());
                pos += RESULT_FIXED_BYTES;
            }
            Some(message) => {
                let mut len = message.len().min(spare);
                while !message.is_char_boundary(len) {
                    len -= 1;
                }
                spare -= len;
                out[pos + 4..pos + 8].copy_from_slice(&(len as i32).to_le_bytes());
                out[pos + 8..pos + 8 + len].copy_from_slice(&message.as_bytes()[..len]);
                pos += RESULT_FIXED_BYTES + len;
            }
        }
    }
    results.len()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Packs acks as AckLayout.java does.
    pub(crate) fn pack(acks: &[Ack]) -> Vec<u8> {
        let mut topics: Vec<&str> = Vec::new();
        for a in acks {
            if !topics.contains(&&*a.topic) {
                topics.push(&a.topic);
            }
        }
        let mut b = Vec::new();
        b.extend((topics.len() as i32).to_le_bytes());
        b.extend((acks.len() as i32).to_le_bytes());
        for t in &topics {
            b.extend((t.len() as i32).to_le_bytes());
            b.extend(t.as_bytes());
        }
        b.resize((b.len() + 7) & !7, 0);
        for a in acks {
            b.extend(a.first_offset.to_le_bytes());
            b.extend(a.last_offset.to_le_bytes());
            let index = topics.iter().position(|t| *t == &*a.topic).unwrap() as i32;
            b.extend(index.to_le_bytes());
            b.extend(a.partition.to_le_bytes());
            b.push(a.kind as i8 as u8);
            b.extend([0u8; 7]);
        }
        b
    }

    #[test]
    fn reads_what_java_packs() {
        let acks = vec![
            Ack::new("orders", 0, 0, 9, AckKind::Accept),
            Ack::new("päyments", 3, 5, 5, AckKind::Release),
            Ack::new("orders", 1, 7, 8, AckKind::Reject),
            Ack::new("orders", 1, 9, 9, AckKind::Renew),
        ];
        assert_eq!(read_acks(&pack(&acks)).unwrap(), acks);
    }

    #[test]
    fn rejects_garbage() {
        let acks = vec![Ack::new("t", 0, 0, 1, AckKind::Accept)];
        let mut b = pack(&acks);
        let type_at = b.len() - 8;
        b[type_at] = 9;
        assert!(read_acks(&b).unwrap_err().to_string().contains("type 9"));
        let b = pack(&acks);
        assert_eq!(
            read_acks(&b[..b.len() - 10]).unwrap_err().kind_name(),
            "CONFIG"
        );
    }

    #[test]
    fn results_fit_with_messages_cut_short() {
        let ack = Ack::new("t", 0, 0, 1, AckKind::Accept);
        let results = vec![
            AckResult {
                ack: ack.clone(),
                error_code: 0,
                error_message: None,
            },
            AckResult {
                ack,
                error_code: 121,
                error_message: Some("ééé".into()),
            },
        ];
        let mut out = vec![0u8; 2 * RESULT_FIXED_BYTES + 5];
        assert_eq!(write_results(&results, &mut out), 2);
        assert_eq!(i16::from_le_bytes([out[0], out[1]]), 0);
        assert_eq!(i32_at(&out, 4).unwrap(), -1);
        assert_eq!(i16::from_le_bytes([out[8], out[9]]), 121);
        assert_eq!(i32_at(&out, 12).unwrap(), 4, "two whole characters");
        assert_eq!(&out[16..20], "éé".as_bytes());
    }
}
