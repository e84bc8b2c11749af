package io.sharesink.connect;

import io.sharesink.connect.sink.ShareSinkDriver;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running share-group member as the task sees it: the driver hosting the legacy task, and the
 * engine it polls. Made by {@link ShareMemberStarter}; stopped once, by the task's cleanup.
 */
final class ShareMember {

  // The task's logger: these lines keep the name an operator's log configuration knows.
  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  private final ShareSinkDriver driver;
  private final ShareConsumerEngine engine;
  private final String taskName;

  ShareMember(ShareSinkDriver driver, ShareConsumerEngine engine, String taskName) {
    this.driver = driver;
    this.engine = engine;
    this.taskName = taskName;
  }

  /** One share cycle (poll, convert, put, commit, acknowledge), bounded by {@code pollTimeout}. */
  void runCycle(Duration pollTimeout) {
    driver.runCycle(pollTimeout);
  }

  /** Ends a running cycle's poll early; from any thread. */
  void wakeup() {
    driver.wakeup();
  }

  /** Replaces the member's subscription (for {@code topics.regex}). */
  void subscribe(List<String> topics) {
    try {
      engine.subscribe(topics);
    } catch (EngineException e) {
      throw NativeErrors.toConnect(taskName + ": cannot change the subscription", e);
    }
  }

  /**
   * Stops the driver (final commit, RELEASE of what is not ACCEPTed, {@code close()} and {@code
   * stop()} of the legacy task), then closes the engine, whatever the driver's stop did.
   */
  void stop() {
    try {
      driver.stop();
    } catch (RuntimeException e) {
      log.error("{}: stopping the legacy sink task failed", taskName, e);
    } finally {
      closeQuietly(engine, taskName);
    }
  }

  /** Closes an engine, logging rather than throwing a failure. */
  static void closeQuietly(ShareConsumerEngine toClose, String taskName) {
    if (toClose == null) {
      return;
    }
    try {
      toClose.close();
    } catch (RuntimeException e) {
      log.warn("{}: closing the share consumer failed", taskName, e);
    }
  }
}
