package io.sharesink.engine;

import static io.sharesink.engine.BatchLayout.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link ShareBatch} over the buffer {@link NativeEngine#poll} wrote ({@link BatchLayout}): every
 * accessor reads the buffer directly, no native call. Valid until the next poll or close of its
 * engine, which overwrite the buffer.
 */
public final class NativeShareBatch implements ShareBatch {

  static final NativeShareBatch EMPTY = new NativeShareBatch();

  private final ByteBuffer buffer;
  private final int size;
  private final String[] topics;
  private final int recordsPosition;

  private NativeShareBatch() {
    this.buffer = ByteBuffer.allocate(0);
    this.size = 0;
    this.topics = new String[0];
    this.recordsPosition = 0;
  }

  /** Reads the header and topic table of the batch in {@code buffer}. */
  NativeShareBatch(ByteBuffer buffer) {
    this.buffer = buffer.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    int version = this.buffer.getInt(H_VERSION);
    if (version != VERSION) {
      throw new IllegalStateException(
          "native batch layout version " + version + ", this reader knows " + VERSION);
    }
    this.size = this.buffer.getInt(H_RECORD_COUNT);
    int topicCount = this.buffer.getInt(H_TOPIC_COUNT);
    this.topics = new String[topicCount];
    int pos = HEADER_BYTES;
    for (int t = 0; t < topicCount; t++) {
      int length = this.buffer.getInt(pos);
      topics[t] = utf8(pos + 4, length);
      pos += 4 + length;
    }
    this.recordsPosition = this.buffer.getInt(H_RECORDS_POSITION);
  }

  /** Native log lines waiting when the buffer was written (header field, 0 for EMPTY). */
  static int pendingLogs(ByteBuffer buffer) {
    return buffer.order(ByteOrder.LITTLE_ENDIAN).getInt(H_PENDING_LOGS);
  }

  private String utf8(int position, int length) {
    byte[] bytes = new byte[length];
    buffer.get(position, bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  private int at(int i) {
    if (i < 0 || i >= size) {
      throw new IndexOutOfBoundsException("record " + i + " of " + size);
    }
    return recordsPosition + i * RECORD_BYTES;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public String topic(int i) {
    return topics[buffer.getInt(at(i) + R_TOPIC_INDEX)];
  }

  @Override
  public int partition(int i) {
    return buffer.getInt(at(i) + R_PARTITION);
  }

  @Override
  public long offset(int i) {
    return buffer.getLong(at(i) + R_OFFSET);
  }

  @Override
  public long timestamp(int i) {
    return buffer.getLong(at(i) + R_TIMESTAMP);
  }

  @Override
  public int timestampType(int i) {
    return buffer.get(at(i) + R_TIMESTAMP_TYPE);
  }

  @Override
  public int deliveryCount(int i) {
    return buffer.getShort(at(i) + R_DELIVERY_COUNT);
  }

  @Override
  public long lockDeadlineMs(int i) {
    return buffer.getLong(at(i) + R_LOCK_DEADLINE);
  }

  @Override
  public long acquiredLastOffset(int i) {
    int at = at(i);
    return buffer.getLong(at + R_OFFSET) + buffer.getInt(at + R_ACQUIRED_LAST_DELTA);
  }

  @Override
  public byte[] key(int i) {
    return copy(at(i) + R_KEY_POSITION);
  }

  @Override
  public byte[] value(int i) {
    return copy(at(i) + R_VALUE_POSITION);
  }

  // The position field is followed by the length field in both blobs.
  private byte[] copy(int positionField) {
    int length = buffer.getInt(positionField + 4);
    if (length < 0) {
      return null;
    }
    byte[] bytes = new byte[length];
    buffer.get(buffer.getInt(positionField), bytes);
    return bytes;
  }

  @Override
  public List<Header> headers(int i) {
    int at = at(i);
    int count = buffer.getInt(at + R_HEADER_COUNT);
    if (count == 0) {
      return List.of();
    }
    List<Header> headers = new ArrayList<>(count);
    int pos = buffer.getInt(at + R_HEADERS_POSITION);
    for (int h = 0; h < count; h++) {
      int keyLength = buffer.getInt(pos);
      String key = utf8(pos + 4, keyLength);
      pos += 4 + keyLength;
      int valueLength = buffer.getInt(pos);
      byte[] value = null;
      pos += 4;
      if (valueLength >= 0) {
        value = new byte[valueLength];
        buffer.get(pos, value);
        pos += valueLength;
      }
      headers.add(new Header(key, value));
    }
    return headers;
  }
}
