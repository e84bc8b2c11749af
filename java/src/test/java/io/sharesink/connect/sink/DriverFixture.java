package io.sharesink.connect.sink;

import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * Wires a legacy task to a driver exactly as a hosting task would. Over an {@link
 * InMemoryShareGroup} the driver runs on the group's mock clock (the lock keeper ticks as that
 * clock moves, see {@link MockTimeKeeperTimer}) and the run helpers count mock time; over a real
 * engine, on the system clock with the JVM's keeper thread.
 */
final class DriverFixture {

  /** Cycles a run helper may take on a mock clock before it gives up (time may stand still). */
  private static final int MAX_CYCLES = 200_000;

  final SinkTask task;
  final ShareSinkTaskContext context;
  final ShareSinkDriver driver;
  final Time time;

  private DriverFixture(
      SinkTask task, ShareSinkTaskContext context, ShareSinkDriver driver, Time time) {
    this.task = task;
    this.context = context;
    this.driver = driver;
    this.time = time;
  }

  static DriverFixture start(
      SinkTask task,
      Map<String, String> props,
      ShareConsumerEngine engine,
      DeadLetterQueue deadLetterQueue,
      boolean brokerWritesDeadLetters) {
    Time time = engine instanceof InMemoryShareGroup group ? group.time() : Time.SYSTEM;
    Map<String, String> config = new HashMap<>(props);
    config.putIfAbsent("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    config.putIfAbsent("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    ShareSinkDriverBuilder builder =
        new ShareSinkDriverBuilder()
            .task(task)
            .taskProps(config)
            .connectorName("test")
            .taskId(0)
            .engine(engine)
            .classLoader(DriverFixture.class.getClassLoader())
            .deadLetterQueue(deadLetterQueue)
            .brokerWritesDeadLetters(brokerWritesDeadLetters)
            .time(time);
    if (time instanceof MockTime mock) {
      builder.keeperTimer(new MockTimeKeeperTimer(mock));
    }
    ShareSinkDriver driver = builder.start();
    return new DriverFixture(task, driver.context(), driver, time);
  }

  static DriverFixture start(SinkTask task, Map<String, String> props, ShareConsumerEngine engine) {
    return start(task, props, engine, null, false);
  }

  /** Runs cycles until {@code done} holds; fails after {@code timeout} on the driver's clock. */
  void runUntil(BooleanSupplier done, Duration timeout, String what) {
    long deadline = time.milliseconds() + timeout.toMillis();
    for (int cycles = 0; !done.getAsBoolean(); cycles++) {
      if (time.milliseconds() > deadline || cycles > MAX_CYCLES) {
        throw new AssertionError("timed out waiting for: " + what);
      }
      driver.runCycle(Duration.ofMillis(50));
    }
  }

  /** Runs cycles for {@code duration} on the driver's clock. */
  void runFor(Duration duration) {
    long deadline = time.milliseconds() + duration.toMillis();
    for (int cycles = 0; time.milliseconds() < deadline; cycles++) {
      if (cycles > MAX_CYCLES) {
        throw new AssertionError("the clock stood still for " + MAX_CYCLES + " cycles");
      }
      driver.runCycle(Duration.ofMillis(50));
    }
  }
}
