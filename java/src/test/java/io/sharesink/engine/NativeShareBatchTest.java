package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java reader of the batch layout against the Rust writer: the library writes the fixed batch
 * of {@code self_test_records} ({@code rust/jni/src/batch_layout.rs}) and every field is read back.
 */
class NativeShareBatchTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  private static byte[] expectedValue(int i) {
    byte[] v = new byte[i * 100];
    for (int j = 0; j < v.length; j++) {
      v[j] = (byte) (i + j);
    }
    return v;
  }

  @Test
  void readsEveryFieldTheNativeWriterWrote() {
    ByteBuffer buffer = ByteBuffer.allocateDirect(8192).order(ByteOrder.LITTLE_ENDIAN);
    assertEquals(5, NativeEngine.layoutSelfTest(buffer));
    NativeShareBatch batch = new NativeShareBatch(buffer);
    assertEquals(5, batch.size());
    for (int i = 0; i < 5; i++) {
      assertEquals(i % 2 == 0 ? "alpha" : "beta-é", batch.topic(i));
      assertEquals(i, batch.partition(i));
      assertEquals(1000 + i, batch.offset(i));
      assertEquals(i == 3 ? -1 : 1_700_000_000_000L + i, batch.timestamp(i));
      assertEquals(i == 3 ? -1 : i % 2, batch.timestampType(i));
      assertEquals(i + 1, batch.deliveryCount(i));
      assertEquals(2_000_000_000_000L + i, batch.lockDeadlineMs(i));
      assertEquals(i < 2 ? 1001 : 1004, batch.acquiredLastOffset(i));
      if (i == 1) {
        assertNull(batch.key(i));
      } else {
        assertArrayEquals(("k" + i).getBytes(StandardCharsets.UTF_8), batch.key(i));
      }
      if (i == 2) {
        assertNull(batch.value(i));
      } else {
        assertArrayEquals(expectedValue(i), batch.value(i));
      }
      if (i != 4) {
        assertEquals(List.of(), batch.headers(i));
      }
    }
    List<ShareBatch.Header> headers = batch.headers(4);
    assertEquals(3, headers.size());
    assertEquals("h1", headers.get(0).key());
    assertArrayEquals("v1".getBytes(StandardCharsets.UTF_8), headers.get(0).value());
    assertEquals("h1", headers.get(1).key());
    assertNull(headers.get(1).value());
    assertEquals("", headers.get(2).key());
    assertArrayEquals(new byte[0], headers.get(2).value());
    assertThrows(IndexOutOfBoundsException.class, () -> batch.offset(5));
  }

  @Test
  void aBufferTooSmallForTheFirstRecordAsksForMore() {
    ByteBuffer tiny = ByteBuffer.allocateDirect(48);
    int result = NativeEngine.layoutSelfTest(tiny);
    assertTrue(result < -1, "needs more: " + result);
    ByteBuffer enough = ByteBuffer.allocateDirect(-result);
    int count = NativeEngine.layoutSelfTest(enough);
    assertTrue(count >= 1, "at least the first record fits: " + count);
    assertEquals(1000, new NativeShareBatch(enough).offset(0));
  }

  @Test
  void aHeapBufferIsRefused() {
    NativeException e =
        assertThrows(
            NativeException.class, () -> NativeEngine.layoutSelfTest(ByteBuffer.allocate(8192)));
    assertEquals(EngineException.Kind.CONFIG, e.kind());
  }
}
