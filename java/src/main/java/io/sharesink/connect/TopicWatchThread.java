package io.sharesink.connect;

import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.MDC;

/**
 * Runs a connector's {@link MissingTopics} checks on a daemon thread of their own until every topic
 * exists, with the connector's logging context, so the lines carry {@code connector.context} as the
 * connector's own do. No thread at all when every topic exists at start.
 */
final class TopicWatchThread implements AutoCloseable {

  /** How often the watch is asked whether a lookup is due (it decides on its own clock). */
  static final long TICK_MS = 1_000;

  private final ScheduledExecutorService executor;

  private TopicWatchThread(MissingTopics watch, String connector) {
    Map<String, String> context = MDC.getCopyOfContextMap();
    executor =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "sharesink-topics-" + connector);
              t.setDaemon(true);
              return t;
            });
    executor.scheduleWithFixedDelay(
        () -> {
          if (context != null) {
            MDC.setContextMap(context);
          }
          watch.checkIfDue();
          if (!watch.watching()) {
            executor.shutdown();
          }
        },
        TICK_MS,
        TICK_MS,
        TimeUnit.MILLISECONDS);
  }

  /**
   * Runs the first check on the caller's thread (so its WARN is in the connector's start-up log),
   * then a thread for the later ones while a topic is missing; null when none is.
   */
  static TopicWatchThread startIfMissing(MissingTopics watch, String connector) {
    watch.checkIfDue();
    return watch.watching() ? new TopicWatchThread(watch, connector) : null;
  }

  @Override
  public void close() {
    executor.shutdownNow();
  }
}
