package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.sharesink.connect.nativelib.NativeLoader;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java reader of the metrics layout against the Rust writer: the library writes the fixed
 * snapshot of {@code self_test_snapshot} ({@code rust/jni/src/metrics_layout.rs}: the value at
 * index i is 100 + i, the two averages 100.5 + i) and every {@link EngineMetrics} component is read
 * back by name.
 */
class MetricsLayoutTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  @Test
  void readsEveryCounterTheNativeWriterWrote() {
    long[] out = new long[MetricsLayout.FIELDS];
    assertEquals(MetricsLayout.FIELDS, NativeEngine.metricsLayoutSelfTest(out));
    EngineMetrics m = MetricsLayout.read(out);
    assertEquals(100, m.recordsFetched());
    assertEquals(101, m.bytesFetched());
    assertEquals(102, m.gapAckedRecords());
    assertEquals(103, m.acceptedRecords());
    assertEquals(104, m.releasedRecords());
    assertEquals(105, m.rejectedRecords());
    assertEquals(106, m.renewedRecords());
    assertEquals(107, m.ackErrors());
    assertEquals(108, m.fetchRequests());
    assertEquals(109.5, m.fetchLatencyAvgMs());
    assertEquals(110, m.ackRequests());
    assertEquals(111.5, m.ackLatencyAvgMs());
    assertEquals(112, m.recordsInFlight());
    assertEquals(113, m.recordsBuffered());
    assertEquals(114, m.rejoins());
    assertEquals(115, m.sessionResets());
    assertEquals(116, m.recordsExpired());
    assertEquals(117, m.recordsReleasedUnpolled());
    assertEquals(118, m.recordsRenewedUnpolled());
    assertEquals(119, m.acksResent());
    assertEquals(120, m.ackConflicts());
    assertEquals(121, m.corruptBatches());
    assertEquals(122, m.emptyFetches());
    assertEquals(123, m.memoryBytes());
    assertEquals(124, m.recordsReleasedForMemory());
  }

  @Test
  void aShortArrayIsRefusedNotOverrun() {
    NativeException e =
        assertThrows(
            NativeException.class,
            () -> NativeEngine.metricsLayoutSelfTest(new long[MetricsLayout.FIELDS - 1]));
    assertEquals(EngineException.Kind.CONFIG, e.kind());
  }
}
