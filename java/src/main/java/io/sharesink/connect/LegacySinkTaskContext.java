package io.sharesink.connect;

import java.util.Collections;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The context the legacy sink task gets. Minimal for the walking skeleton: it records what the task
 * asks for (timeout, pause, commit) so the share cycle can honour it once it exists, and answers
 * {@link #pluginMetrics()} through our own task's context.
 */
final class LegacySinkTaskContext implements SinkTaskContext {

  private static final Logger log = LoggerFactory.getLogger(LegacySinkTaskContext.class);

  private final SourceTaskContext ours;
  private final Map<String, String> legacyConfigs;
  private final Set<TopicPartition> paused = Collections.synchronizedSet(new HashSet<>());
  private final AtomicBoolean rewindWarned = new AtomicBoolean();
  private final AtomicBoolean commitRequested = new AtomicBoolean();
  private volatile long timeoutMs = -1L;

  LegacySinkTaskContext(SourceTaskContext ours, Map<String, String> legacyConfigs) {
    this.ours = ours;
    this.legacyConfigs = Collections.unmodifiableMap(legacyConfigs);
  }

  @Override
  public Map<String, String> configs() {
    return legacyConfigs;
  }

  @Override
  public void offset(Map<TopicPartition, Long> offsets) {
    warnRewindOnce(offsets.keySet().toString());
  }

  @Override
  public void offset(TopicPartition tp, long offset) {
    warnRewindOnce(tp + "@" + offset);
  }

  // A share group has no per-member position to seek; rewinds cannot be honoured.
  private void warnRewindOnce(String what) {
    if (rewindWarned.compareAndSet(false, true)) {
      log.warn(
          "The sink task asked to rewind ({}); share groups cannot seek, so this and later"
              + " rewind requests are ignored",
          what);
    }
  }

  @Override
  public void timeout(long timeoutMs) {
    this.timeoutMs = timeoutMs;
  }

  /** The retry backoff the task asked for with {@link #timeout(long)}, or -1. */
  long timeoutMs() {
    return timeoutMs;
  }

  @Override
  public Set<TopicPartition> assignment() {
    // Partitions are "assigned" once records of them are handed to the task; none yet.
    return Set.of();
  }

  @Override
  public void pause(TopicPartition... partitions) {
    Collections.addAll(paused, partitions);
  }

  @Override
  public void resume(TopicPartition... partitions) {
    for (TopicPartition tp : partitions) {
      paused.remove(tp);
    }
  }

  @Override
  public void requestCommit() {
    commitRequested.set(true);
  }

  @Override
  public PluginMetrics pluginMetrics() {
    return ours.pluginMetrics();
  }
}
