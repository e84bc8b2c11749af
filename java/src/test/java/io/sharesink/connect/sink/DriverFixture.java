package io.sharesink.connect.sink;

import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.connect.sink.SinkTask;

/** Wires a legacy task to a driver exactly as a hosting task would. */
final class DriverFixture {

  final SinkTask task;
  final ShareSinkTaskContext context;
  final ShareSinkDriver driver;

  private DriverFixture(SinkTask task, ShareSinkTaskContext context, ShareSinkDriver driver) {
    this.task = task;
    this.context = context;
    this.driver = driver;
  }

  static DriverFixture start(
      SinkTask task,
      Map<String, String> props,
      ShareConsumerEngine engine,
      DeadLetterQueue deadLetterQueue,
      boolean brokerWritesDeadLetters) {
    Map<String, String> config = new HashMap<>(props);
    config.putIfAbsent("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    config.putIfAbsent("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    ShareSinkDriver driver =
        new ShareSinkDriverBuilder()
            .task(task)
            .taskProps(config)
            .connectorName("test")
            .taskId(0)
            .engine(engine)
            .classLoader(DriverFixture.class.getClassLoader())
            .deadLetterQueue(deadLetterQueue)
            .brokerWritesDeadLetters(brokerWritesDeadLetters)
            .start();
    return new DriverFixture(task, driver.context(), driver);
  }

  static DriverFixture start(SinkTask task, Map<String, String> props, ShareConsumerEngine engine) {
    return start(task, props, engine, null, false);
  }

  /** Runs cycles until {@code done} holds; fails after {@code timeout}. */
  void runUntil(BooleanSupplier done, Duration timeout, String what) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!done.getAsBoolean()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out waiting for: " + what);
      }
      driver.runCycle(Duration.ofMillis(50));
    }
  }

  void runFor(Duration duration) {
    long deadline = System.nanoTime() + duration.toNanos();
    while (System.nanoTime() < deadline) {
      driver.runCycle(Duration.ofMillis(50));
    }
  }
}
