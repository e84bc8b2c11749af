package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class ContextCallsTest {

  @Test
  void everySinkTaskContextMethodTheTaskCallsIsCounted() {
    ShareSinkTaskContext context =
        new ShareSinkTaskContext(Map::of, new SinkDriverConfig(Map.of()), null, null, "t-0");
    TopicPartition tp = new TopicPartition("t", 0);
    context.assignment();
    context.assignment();
    context.pause(tp);
    context.resume(tp);
    context.offset(tp, 5);
    context.offset(Map.of(tp, 6L));
    context.timeout(100);
    context.requestCommit();
    context.errantRecordReporter();
    context.pluginMetrics();
    context.configs();

    ContextCalls calls = context.calls();
    assertEquals(2, calls.count(ContextCalls.Call.ASSIGNMENT));
    assertEquals(2, calls.count(ContextCalls.Call.OFFSET));
    for (ContextCalls.Call c :
        new ContextCalls.Call[] {
          ContextCalls.Call.PAUSE,
          ContextCalls.Call.RESUME,
          ContextCalls.Call.TIMEOUT,
          ContextCalls.Call.REQUEST_COMMIT,
          ContextCalls.Call.ERRANT_RECORD_REPORTER,
          ContextCalls.Call.PLUGIN_METRICS,
          ContextCalls.Call.CONFIGS
        }) {
      assertEquals(1, calls.count(c), c.label);
    }
    assertTrue(calls.toString().contains("assignment()=2"), calls.toString());
    assertTrue(calls.toString().contains("requestCommit()=1"), calls.toString());
  }

  @Test
  void whatSharesinkItselfReadsIsNotCounted() {
    ShareSinkTaskContext context =
        new ShareSinkTaskContext(Map::of, new SinkDriverConfig(Map.of()), null, null, "t-0");
    context.opened();
    context.takeTimeout();
    context.takeCommitRequest();
    context.anyPaused();
    context.isPaused(new TopicPartition("t", 0));
    for (ContextCalls.Call c : ContextCalls.Call.values()) {
      assertEquals(0, context.calls().count(c), c.label);
    }
  }
}
