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
    ClassLoader loader = DriverFixture.class.getClassLoader();
    SinkDriverConfig driverConfig = new SinkDriverConfig(config);
    ErrorHandling errors =
        new ErrorHandling(driverConfig, "test-0", deadLetterQueue, brokerWritesDeadLetters);
    ShareSinkTaskContext context =
        new ShareSinkTaskContext(() -> config, driverConfig, errors, null, "test-0");
    task.initialize(context);
    task.start(config);
    ShareSinkDriver driver =
        new ShareSinkDriver(
            task,
            context,
            engine,
            ConnectPlugins.newConverter(config, "key.converter", null, loader),
            ConnectPlugins.newConverter(config, "value.converter", null, loader),
            ConnectPlugins.newHeaderConverter(config, null, loader),
            TransformChain.fromConfig(config, loader),
            driverConfig,
            errors,
            true,
            "test-0");
    return new DriverFixture(task, context, driver);
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
