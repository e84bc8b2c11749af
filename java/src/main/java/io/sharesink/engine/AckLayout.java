package io.sharesink.engine;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Packs {@link Acknowledgements} into a direct buffer for one {@link NativeEngine#acknowledge} or
 * {@link NativeEngine#acknowledgeSync} crossing, and reads the per-range results back. The native
 * side is {@code rust/jni/src/ack_layout.rs}; keep both in step.
 *
 * <pre>
 * request (little-endian)
 *    0  i32  topic count t
 *    4  i32  range count n
 *    8  topic table: t entries of  i32 length, UTF-8 bytes
 *   then, from the next multiple of 8: n ranges of 32 bytes
 *      0  i64  first offset     8  i64  last offset (inclusive)
 *     16  i32  topic index     20  i32  partition
 *     24  i8   type (AckType code)   25  7 bytes reserved
 * results (acknowledgeSync), written from 0 over the request, one per range in order:
 *   i16 Kafka error code (0 = applied), i16 reserved, i32 message length (-1 = none), UTF-8 bytes
 *   (messages are cut short when the buffer is full)
 * </pre>
 *
 * Not thread-safe: one per engine, used under the engine's acknowledgement lock.
 */
final class AckLayout {

  static final int RANGE_BYTES = 32;

  static final int INITIAL_BYTES = 16 * 1024;

  private ByteBuffer buffer;
  private final Map<String, Integer> topicIndex = new HashMap<>();
  private final List<byte[]> topicNames = new ArrayList<>();

  ByteBuffer buffer() {
    return buffer;
  }

  /** Gives the buffer back to the pool; the layout is unusable afterwards. */
  void release() {
    DirectBuffers.give(buffer);
    buffer = null;
  }

  /** Packs {@code acks}; returns the number of bytes used. */
  int pack(Acknowledgements acks) {
    topicIndex.clear();
    topicNames.clear();
    int tableBytes = 0;
    for (Acknowledgements.Range r : acks.ranges()) {
      if (!topicIndex.containsKey(r.topic())) {
        byte[] name = r.topic().getBytes(StandardCharsets.UTF_8);
        topicIndex.put(r.topic(), topicNames.size());
        topicNames.add(name);
        tableBytes += 4 + name.length;
      }
    }
    int rangesPosition = align8(8 + tableBytes);
    int length = rangesPosition + acks.size() * RANGE_BYTES;
    ensure(length);
    ByteBuffer b = buffer;
    b.putInt(0, topicNames.size());
    b.putInt(4, acks.size());
    int pos = 8;
    for (byte[] name : topicNames) {
      b.putInt(pos, name.length);
      b.put(pos + 4, name);
      pos += 4 + name.length;
    }
    while (pos < rangesPosition) {
      b.put(pos++, (byte) 0);
    }
    for (Acknowledgements.Range r : acks.ranges()) {
      b.putLong(pos, r.firstOffset());
      b.putLong(pos + 8, r.lastOffset());
      b.putInt(pos + 16, topicIndex.get(r.topic()));
      b.putInt(pos + 20, r.partition());
      b.putLong(pos + 24, 0L);
      b.put(pos + 24, r.type().code());
      pos += RANGE_BYTES;
    }
    return length;
  }

  /** Reads {@code count} results written over the request packed from {@code acks}. */
  List<AckResult> results(Acknowledgements acks, int count) {
    List<AckResult> results = new ArrayList<>(count);
    int pos = 0;
    for (int i = 0; i < count; i++) {
      short code = buffer.getShort(pos);
      int messageLength = buffer.getInt(pos + 4);
      pos += 8;
      String message = null;
      if (messageLength >= 0) {
        byte[] bytes = new byte[messageLength];
        buffer.get(pos, bytes);
        message = new String(bytes, StandardCharsets.UTF_8);
        pos += messageLength;
      }
      results.add(new AckResult(acks.ranges().get(i), code, message));
    }
    return results;
  }

  private void ensure(int length) {
    if (buffer == null) {
      buffer = DirectBuffers.take(Math.max(INITIAL_BYTES, length));
    } else if (buffer.capacity() < length) {
      int capacity = buffer.capacity();
      while (capacity < length) {
        capacity *= 2;
      }
      DirectBuffers.give(buffer);
      buffer = DirectBuffers.take(capacity);
    }
  }

  private static int align8(int n) {
    return (n + 7) & ~7;
  }
}
