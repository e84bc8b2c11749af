package io.sharesink.connect;

import io.sharesink.connect.sink.KeeperTimer;
import io.sharesink.connect.topics.TopicPatternSubscription;
import io.sharesink.engine.ShareConsumerEngine;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.kafka.common.utils.Time;

/**
 * What a {@link ShareSinkTask} is wired to outside itself, given once to its constructor: the
 * clock, what runs the driver's lock keeper, where the worker's configuration comes from, how an
 * engine is opened and how {@code topics.regex} is followed. A worker's task gets {@link
 * #system()}; a test passes a {@code MockTime} and its own engines.
 */
record TaskWiring(
    Time time,
    KeeperTimer keeperTimer,
    Supplier<WorkerDefaults> workerDefaults,
    EngineOpener engines,
    TopicPatternOpener topicPatterns) {

  /** Opens one member's engine: {@link ShareEngineOpener#open}, or a test's engine. */
  @FunctionalInterface
  interface EngineOpener {
    ShareConsumerEngine open(EngineRequest request);
  }

  /**
   * The subscription for a task's {@code topics.regex}: {@link TopicPatternFollower#subscription},
   * or a test's over a fake cluster.
   */
  @FunctionalInterface
  interface TopicPatternOpener {
    TopicPatternSubscription open(
        Pattern pattern,
        ShareSinkConfig config,
        ConnectorClients clients,
        WorkerDefaults worker,
        Time time,
        String taskName);
  }

  /** The wiring of a task in a worker: the system clock, the shared lock keeper, the real parts. */
  static TaskWiring system() {
    return new TaskWiring(
        Time.SYSTEM,
        KeeperTimer.shared(),
        WorkerDefaults::current,
        request -> new ShareEngineOpener(Time.SYSTEM).open(request),
        TopicPatternFollower::subscription);
  }
}
