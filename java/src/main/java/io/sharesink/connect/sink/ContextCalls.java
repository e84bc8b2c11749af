package io.sharesink.connect.sink;

import java.util.StringJoiner;
import java.util.concurrent.atomic.AtomicLongArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a legacy sink task asks of its {@link org.apache.kafka.connect.sink.SinkTaskContext}: one
 * counter per method, so an operator (and the compatibility matrix's tests) can see which of its
 * calls the sink relies on, and so which of sharesink's answers it depends on. The first call of
 * each method is logged at DEBUG (a task killed with its worker leaves that trace); the counts go
 * into the driver's stop line.
 */
final class ContextCalls {

  private static final Logger log = LoggerFactory.getLogger(ContextCalls.class);

  /** The methods of {@code SinkTaskContext}. */
  enum Call {
    CONFIGS("configs()"),
    ASSIGNMENT("assignment()"),
    PAUSE("pause"),
    RESUME("resume"),
    OFFSET("offset"),
    TIMEOUT("timeout"),
    REQUEST_COMMIT("requestCommit()"),
    ERRANT_RECORD_REPORTER("errantRecordReporter()"),
    PLUGIN_METRICS("pluginMetrics()");

    final String label;

    Call(String label) {
      this.label = label;
    }
  }

  private final AtomicLongArray counts = new AtomicLongArray(Call.values().length);
  private final String taskName;

  ContextCalls(String taskName) {
    this.taskName = taskName;
  }

  void record(Call call) {
    if (counts.getAndIncrement(call.ordinal()) == 0) {
      log.debug("{}: the sink task called SinkTaskContext.{} (first call)", taskName, call.label);
    }
  }

  long count(Call call) {
    return counts.get(call.ordinal());
  }

  /** Every method with its count, e.g. {@code {configs()=0, assignment()=2, ...}}. */
  @Override
  public String toString() {
    StringJoiner out = new StringJoiner(", ", "{", "}");
    for (Call c : Call.values()) {
      out.add(c.label + "=" + counts.get(c.ordinal()));
    }
    return out.toString();
  }
}
