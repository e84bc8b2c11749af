package io.sharesink.connect;

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.connect.sink.StopBudget;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.NativeEngineSettings;
import io.sharesink.engine.NativeShareConsumerEngine;
import io.sharesink.engine.ShareConsumerEngine;
import io.sharesink.engine.kafka.KafkaShareConsumerEngine;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a task's share-group member on the engine {@code share.engine} chose (the worker's
 * KafkaShareConsumer or the native engine) on the task's clock, and says which settings the native
 * engine starts with and which it would not use.
 */
final class ShareEngineOpener {

  // The task's logger: these lines keep the name an operator's log configuration knows.
  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  /** The native engine's bound on holding fetched records for a caller that does not poll. */
  static final String BUFFER_HOLD_MAX_MS = "share.buffer.hold.max.ms";

  /** The native engine's close budget. */
  static final String CLOSE_TIMEOUT_MS = "share.close.timeout.ms";

  private final Time time;

  ShareEngineOpener(Time time) {
    this.time = time;
  }

  /**
   * One share-group member, from the engine the request's {@code kind} names; its {@code
   * stuckTimeoutMs} bounds what a native engine holds (see {@link #nativeSettings}).
   */
  ShareConsumerEngine open(EngineRequest request) {
    String taskName = request.taskName();
    String groupId = request.groupId();
    List<String> topics = request.topics();
    Map<String, Object> settings = new HashMap<>(request.clientSettings());
    settings.put("group.id", groupId);
    settings.putIfAbsent("client.id", request.clientId());
    if (ShareSinkConfig.ENGINE_JAVA.equals(request.kind())) {
      try {
        ShareConsumerEngine java =
            new KafkaShareConsumerEngine(settings, topics, time, StopBudget.ENGINE_CLOSE);
        log.info(
            "{}: the worker's KafkaShareConsumer joins share group {} on {}",
            taskName,
            groupId,
            topics);
        return java;
      } catch (EngineException e) {
        throw NativeErrors.toConnect(taskName + ": cannot start the Java share consumer", e);
      } catch (LinkageError e) {
        throw new ConnectException(
            "share.engine=java needs a worker with Kafka 4.2+ clients (KafkaShareConsumer): " + e,
            e);
      }
    }
    String nativeVersion = NativeLoader.ensureLoaded();
    try {
      ShareConsumerEngine nativeEngine =
          new NativeShareConsumerEngine(
              nativeSettings(settings, request.stuckTimeoutMs()), topics, time);
      log.info(
          "{}: sharesink native engine {} started member {} of share group {} on {}",
          taskName,
          nativeVersion,
          settings.get("client.id"),
          groupId,
          topics);
      return nativeEngine;
    } catch (EngineException e) {
      throw NativeErrors.toConnect(
          taskName + ": the native share consumer could not start for group " + groupId, e);
    }
  }

  /**
   * The settings a native member starts with: the client settings, plus {@value
   * #BUFFER_HOLD_MAX_MS} = {@code share.task.stuck.timeout.ms} unless {@code
   * share.consumer.share.buffer.hold.max.ms} sets it, and {@value #CLOSE_TIMEOUT_MS} = {@link
   * StopBudget#ENGINE_CLOSE} unless {@code share.consumer.share.close.timeout.ms} sets it. The
   * engine renews the records it has fetched and the task has not polled while the task thread is
   * stuck in a call, as the driver renews the ones it holds, and both release theirs after the same
   * time: the member behaves one way.
   */
  static Map<String, Object> nativeSettings(Map<String, Object> settings, long stuckTimeoutMs) {
    Map<String, Object> out = new HashMap<>(settings);
    out.putIfAbsent(BUFFER_HOLD_MAX_MS, Long.toString(stuckTimeoutMs));
    out.putIfAbsent(CLOSE_TIMEOUT_MS, Long.toString(StopBudget.ENGINE_CLOSE.toMillis()));
    return out;
  }

  /**
   * The settings the native engine would not use, each named as the operator set it, in a sentence
   * for a WARN; null when it uses them all.
   */
  static String unreadByNativeEngine(ShareConsumerSettings consumerSettings) {
    List<String> unread =
        NativeEngineSettings.unread(consumerSettings.settings()).stream()
            // Read by the task itself: how often topics.regex is matched again.
            .filter(k -> !k.equals(ShareConsumerSettings.METADATA_MAX_AGE_MS))
            .toList();
    if (unread.isEmpty()) {
      return null;
    }
    List<String> named =
        unread.stream().map(k -> k + " (" + consumerSettings.origin(k) + ")").toList();
    return "the native engine does not use these consumer settings, so they have no effect: "
        + String.join(", ", named)
        + " (the Java client does: "
        + ShareSinkConfig.ENGINE_CONFIG
        + "="
        + ShareSinkConfig.ENGINE_JAVA
        + ")";
  }
}
