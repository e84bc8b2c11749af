package io.sharesink.connect;

import java.util.List;
import java.util.Map;

/**
 * What one share-group member's engine is opened with: the engine {@code share.engine} chose
 * ({@code kind}), the consumer's client settings, the group and client ids, the topics, the
 * driver's {@code share.task.stuck.timeout.ms} (the native engine holds fetched records no longer)
 * and the task's name for its log lines.
 */
record EngineRequest(
    String kind,
    Map<String, Object> clientSettings,
    String groupId,
    String clientId,
    List<String> topics,
    long stuckTimeoutMs,
    String taskName) {

  EngineRequest {
    clientSettings = Map.copyOf(clientSettings);
    topics = List.copyOf(topics);
  }
}
