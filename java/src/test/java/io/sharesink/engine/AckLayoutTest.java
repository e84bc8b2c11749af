package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * {@link AckLayout} against the layout its comment (and {@code rust/jni/src/ack_layout.rs}, whose
 * own tests check the Rust side) documents, byte by byte.
 */
class AckLayoutTest {

  @Test
  void packsTheTopicTableAndAlignedRangesAsDocumented() {
    Acknowledgements acks =
        new Acknowledgements()
            .add("orders", 3, 10, 19, AckType.ACCEPT)
            .add("audit", 0, 7, 7, AckType.REJECT)
            .add("orders", 1, 5, 6, AckType.RENEW);
    AckLayout layout = new AckLayout();
    int length = layout.pack(acks);
    ByteBuffer b = layout.buffer();

    assertEquals(2, b.getInt(0), "topic count");
    assertEquals(3, b.getInt(4), "range count");
    assertEquals(6, b.getInt(8));
    assertEquals("orders", string(b, 12, 6));
    assertEquals(5, b.getInt(18));
    assertEquals("audit", string(b, 22, 5));
    int ranges = 32; // 8 + (4 + 6) + (4 + 5) = 27, aligned to 8
    assertEquals(ranges + 3 * AckLayout.RANGE_BYTES, length);
    assertEquals(0, b.get(27), "alignment padding is zero");

    assertRange(b, ranges, 10, 19, 0, 3, AckType.ACCEPT);
    assertRange(b, ranges + 32, 7, 7, 1, 0, AckType.REJECT);
    assertRange(b, ranges + 64, 5, 6, 0, 1, AckType.RENEW);
    layout.release();
  }

  @Test
  void readsOneResultPerRangeWithOrWithoutAMessage() {
    Acknowledgements acks =
        new Acknowledgements().add("t", 0, 0, 4, AckType.ACCEPT).add("t", 1, 2, 2, AckType.RELEASE);
    AckLayout layout = new AckLayout();
    layout.pack(acks);
    ByteBuffer b = layout.buffer();
    b.putShort(0, (short) 0).putShort(2, (short) 0).putInt(4, -1);
    byte[] message = "INVALID_RECORD_STATE".getBytes(StandardCharsets.UTF_8);
    b.putShort(8, (short) 121).putShort(10, (short) 0).putInt(12, message.length);
    b.put(16, message);

    List<AckResult> results = layout.results(acks, 2);
    assertEquals(2, results.size());
    assertTrue(results.get(0).ok());
    assertNull(results.get(0).errorMessage());
    assertEquals(acks.ranges().get(0), results.get(0).range());
    assertEquals(121, results.get(1).errorCode());
    assertEquals("INVALID_RECORD_STATE", results.get(1).errorMessage());
    assertEquals(acks.ranges().get(1), results.get(1).range());
    layout.release();
  }

  private static void assertRange(
      ByteBuffer b, int at, long first, long last, int topic, int partition, AckType type) {
    assertEquals(first, b.getLong(at), "first offset");
    assertEquals(last, b.getLong(at + 8), "last offset");
    assertEquals(topic, b.getInt(at + 16), "topic index");
    assertEquals(partition, b.getInt(at + 20), "partition");
    assertEquals(type.code(), b.get(at + 24), "type");
    for (int i = 25; i < 32; i++) {
      assertEquals(0, b.get(at + i), "reserved byte " + i);
    }
  }

  private static String string(ByteBuffer b, int at, int length) {
    byte[] bytes = new byte[length];
    b.get(at, bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }
}
