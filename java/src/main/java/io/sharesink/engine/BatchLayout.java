package io.sharesink.engine;

/**
 * The batch layout {@link NativeEngine#poll} writes into its direct buffer and {@link
 * NativeShareBatch} reads. The writer is {@code rust/jni/src/batch_layout.rs}; keep both in step
 * ({@code NativeShareBatchTest} reads the native self-test batch to check they agree).
 *
 * <p>All integers little-endian; positions are absolute byte offsets from the buffer's start.
 *
 * <pre>
 * header (32 bytes)
 *    0  i32  layout version (2)
 *    4  i32  record count n
 *    8  i32  topic count t
 *   12  i32  bytes used
 *   16  i32  position of the record table (8-aligned)
 *   20  i32  native log lines waiting to be drained
 *   24  i32  records of the fetched batch still pending after this one (split batches)
 *   28  i32  reserved
 * topic table, from 32: t entries of  i32 length, UTF-8 bytes
 * record table: n entries of 64 bytes
 *    0  i64  offset                 8  i64  timestamp (-1 none)
 *   16  i64  lock deadline (wall-clock ms)
 *   24  i32  topic index           28  i32  partition
 *   32  i32  key position          36  i32  key length (-1 = null)
 *   40  i32  value position        44  i32  value length (-1 = null)
 *   48  i32  headers position      52  i32  header count
 *   56  i16  delivery count        58  i8   timestamp type (0 create, 1 log append, -1 none)
 *   60  i32  acquired range end: offset of the last record delivered from the same acquired
 *            range, minus this record's offset
 * data area: keys, values, header blocks; a header block is
 *   header count × (i32 key length, key UTF-8, i32 value length (-1 = null), value bytes)
 * </pre>
 *
 * <p>A fetched batch larger than the buffer is split: each poll returns the whole records that fit
 * and the next poll returns the rest at once. Only a record larger than the whole buffer makes poll
 * ask for a bigger one.
 */
final class BatchLayout {

  private BatchLayout() {}

  static final int VERSION = 2;
  static final int HEADER_BYTES = 32;
  static final int RECORD_BYTES = 64;

  static final int H_VERSION = 0;
  static final int H_RECORD_COUNT = 4;
  static final int H_TOPIC_COUNT = 8;
  static final int H_BYTES_USED = 12;
  static final int H_RECORDS_POSITION = 16;
  static final int H_PENDING_LOGS = 20;
  static final int H_PENDING_RECORDS = 24;

  static final int R_OFFSET = 0;
  static final int R_TIMESTAMP = 8;
  static final int R_LOCK_DEADLINE = 16;
  static final int R_TOPIC_INDEX = 24;
  static final int R_PARTITION = 28;
  static final int R_KEY_POSITION = 32;
  static final int R_KEY_LENGTH = 36;
  static final int R_VALUE_POSITION = 40;
  static final int R_VALUE_LENGTH = 44;
  static final int R_HEADERS_POSITION = 48;
  static final int R_HEADER_COUNT = 52;
  static final int R_DELIVERY_COUNT = 56;
  static final int R_TIMESTAMP_TYPE = 58;
  static final int R_ACQUIRED_LAST_DELTA = 60;
}
