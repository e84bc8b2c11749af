package io.sharesink.connect.admin;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * The share-group operations sharesink does with the worker's Java admin client: read what the
 * cluster allows, set group configs, read and seed start offsets. The native engine is the data
 * path only; group administration stays on the Java client the worker already carries.
 */
public final class ShareGroupAdmin implements AutoCloseable {

  /** Admin clients made in this JVM: each gets its own client id. */
  private static final AtomicInteger CLIENTS = new AtomicInteger();

  /** Backoffs while the cluster cannot be reached (Kafka's defaults: 50 ms to 1 s, 100 ms). */
  static final Map<String, Object> BACKOFF_DEFAULTS =
      Map.of(
          AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, 500L,
          AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 10_000L,
          AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, 500L,
          AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG, 10_000L);

  /** How long close waits for calls still running: the connector's stop must stay short. */
  static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(1);

  private final Admin admin;
  private final Duration timeout;

  public ShareGroupAdmin(Admin admin, Duration timeout) {
    this.admin = admin;
    this.timeout = timeout;
  }

  /**
   * An admin client from Kafka client settings ({@code bootstrap.servers}, security); consumer-only
   * settings are dropped so the client does not warn about them.
   */
  public static ShareGroupAdmin create(
      Map<String, Object> clientSettings, String clientId, Duration timeout) {
    Map<String, Object> config = new HashMap<>();
    Set<String> known = AdminClientConfig.configNames();
    clientSettings.forEach(
        (key, value) -> {
          if (known.contains(key)) {
            config.put(key, value);
          }
        });
    config.put(AdminClientConfig.CLIENT_ID_CONFIG, uniqueClientId(clientId));
    // While the cluster is unreachable the admin client rebootstraps at every retry: back off to
    // seconds (unless the settings say otherwise), not Kafka's 100 ms.
    BACKOFF_DEFAULTS.forEach(config::putIfAbsent);
    int ms = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
    config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, ms);
    config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(ms, 30_000));
    return new ShareGroupAdmin(Admin.create(config), timeout);
  }

  /**
   * {@code base} with a number of its own: several admin clients of one connector (a restarted
   * connector, a validation beside it) must not share a client id, or their metrics and log lines
   * cannot be told apart.
   */
  static String uniqueClientId(String base) {
    return base + "-" + CLIENTS.incrementAndGet();
  }

  /** Reads share.version, one broker's configs and the group's effective configs. */
  public ClusterFacts facts(String groupId) {
    return facts(groupId, "");
  }

  /**
   * Reads share.version, one broker's configs, the group's effective configs (when {@code groupId}
   * is not null) and the DLQ topic's configs (when {@code dlqTopic} is not empty).
   */
  public ClusterFacts facts(String groupId, String dlqTopic) {
    OptionalInt shareVersion = OptionalInt.empty();
    FinalizedVersionRange range =
        get(admin.describeFeatures().featureMetadata(), "describing the cluster's features")
            .finalizedFeatures()
            .get("share.version");
    if (range != null) {
      shareVersion = OptionalInt.of(range.maxVersionLevel());
    } else {
      shareVersion = OptionalInt.of(0);
    }
    Collection<Node> nodes = get(admin.describeCluster().nodes(), "describing the cluster");
    Map<String, String> broker = Map.of();
    if (!nodes.isEmpty()) {
      String id = nodes.iterator().next().idString();
      broker = describe(new ConfigResource(ConfigResource.Type.BROKER, id));
    }
    Map<String, String> group =
        groupId == null
            ? Map.of()
            : describe(new ConfigResource(ConfigResource.Type.GROUP, groupId));
    Optional<Map<String, String>> dlq = Optional.empty();
    if (dlqTopic != null && !dlqTopic.isEmpty()) {
      try {
        dlq = Optional.of(describe(new ConfigResource(ConfigResource.Type.TOPIC, dlqTopic)));
      } catch (ConnectException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw e;
        }
      }
    }
    return new ClusterFacts(shareVersion, broker, group, dlq);
  }

  private Map<String, String> describe(ConfigResource resource) {
    DescribeConfigsOptions options = new DescribeConfigsOptions().includeSynonyms(false);
    Map<ConfigResource, Config> result =
        get(
            admin.describeConfigs(List.of(resource), options).all(),
            "describing the configs of " + resource);
    Map<String, String> out = new HashMap<>();
    Config config = result.get(resource);
    if (config != null) {
      for (ConfigEntry entry : config.entries()) {
        if (entry.value() != null) {
          out.put(entry.name(), entry.value());
        }
      }
    }
    return out;
  }

  /**
   * The topics of {@code topics} the cluster does not know, in their order. A topic the client may
   * not describe counts as existing: only the broker's "unknown topic" makes one missing.
   *
   * @throws ConnectException when the cluster does not answer within the timeout
   */
  public List<String> missingTopics(Collection<String> topics) {
    Map<String, KafkaFuture<TopicDescription>> described =
        admin.describeTopics(topics).topicNameValues();
    List<String> missing = new ArrayList<>();
    for (String topic : topics) {
      KafkaFuture<TopicDescription> future = described.get(topic);
      if (future == null) {
        continue;
      }
      try {
        get(future, "describing topic " + topic);
      } catch (ConnectException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          if (e.getCause() instanceof TopicAuthorizationException) {
            continue;
          }
          throw e;
        }
        missing.add(topic);
      }
    }
    return missing;
  }

  /** Sets ({@code value} non-null) or deletes ({@code value} null) group configs, in one call. */
  public void alterGroupConfigs(String groupId, Map<String, String> settings) {
    if (settings.isEmpty()) {
      return;
    }
    List<AlterConfigOp> ops = new ArrayList<>();
    settings.forEach(
        (key, value) ->
            ops.add(
                new AlterConfigOp(
                    new ConfigEntry(key, value == null ? "" : value),
                    value == null ? AlterConfigOp.OpType.DELETE : AlterConfigOp.OpType.SET)));
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, groupId);
    get(
        admin.incrementalAlterConfigs(Map.of(resource, ops)).all(),
        "setting configs " + settings + " on share group " + groupId);
  }

  /** The share group's start offset (and lag) per partition; empty for a group without state. */
  public Map<TopicPartition, SharePartitionOffsetInfo> shareGroupOffsets(String groupId) {
    try {
      Map<TopicPartition, SharePartitionOffsetInfo> offsets =
          admin
              .listShareGroupOffsets(Map.of(groupId, new ListShareGroupOffsetsSpec()))
              .partitionsToOffsetInfo(groupId)
              .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      Map<TopicPartition, SharePartitionOffsetInfo> out = new HashMap<>();
      // A partition listed without state comes back with a null value or a negative offset.
      offsets.forEach(
          (tp, info) -> {
            if (info != null && info.startOffset() >= 0) {
              out.put(tp, info);
            }
          });
      return out;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof GroupIdNotFoundException) {
        return Map.of();
      }
      throw wrap("listing the start offsets of share group " + groupId, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ConnectException("interrupted listing share group offsets", e);
    } catch (TimeoutException e) {
      throw wrap("listing the start offsets of share group " + groupId, e);
    }
  }

  /**
   * The share group's start offsets and lags as {@link #shareGroupOffsets(String)} reads them, each
   * lag counted to the partition's last stable offset when {@code readCommitted}: the broker counts
   * it to the partition's end, but a group reading committed records cannot deliver those of a
   * transaction still open, so they are no backlog of the connector's (an open transaction would
   * look like a stalled connector). The ends are read right after the lags; records produced in
   * between are counted to neither, and a lag never falls below 0.
   */
  public Map<TopicPartition, SharePartitionOffsetInfo> shareGroupOffsets(
      String groupId, boolean readCommitted) {
    Map<TopicPartition, SharePartitionOffsetInfo> offsets = shareGroupOffsets(groupId);
    if (!readCommitted || offsets.isEmpty()) {
      return offsets;
    }
    return toStableOffsets(
        offsets, endOffsets(offsets.keySet(), false), endOffsets(offsets.keySet(), true));
  }

  /**
   * {@code offsets} with each lag less the records between the partition's end and its last stable
   * offset, never below 0; a partition whose ends are unknown keeps its lag.
   */
  static Map<TopicPartition, SharePartitionOffsetInfo> toStableOffsets(
      Map<TopicPartition, SharePartitionOffsetInfo> offsets,
      Map<TopicPartition, Long> ends,
      Map<TopicPartition, Long> stable) {
    Map<TopicPartition, SharePartitionOffsetInfo> out = new HashMap<>();
    offsets.forEach(
        (tp, info) -> {
          Long end = ends.get(tp);
          Long lso = stable.get(tp);
          if (info.lag().isEmpty() || end == null || lso == null) {
            out.put(tp, info);
            return;
          }
          long unstable = Math.max(0, end - lso);
          out.put(
              tp,
              new SharePartitionOffsetInfo(
                  info.startOffset(),
                  info.leaderEpoch(),
                  Optional.of(Math.max(0, info.lag().get() - unstable))));
        });
    return out;
  }

  /**
   * Each partition's end: its log end offset, or with {@code stable} its last stable offset (below
   * the first record of a transaction still open), where a group reading committed records stops.
   */
  public Map<TopicPartition, Long> endOffsets(
      Collection<TopicPartition> partitions, boolean stable) {
    Map<TopicPartition, OffsetSpec> request = new HashMap<>();
    partitions.forEach(tp -> request.put(tp, OffsetSpec.latest()));
    ListOffsetsOptions options =
        new ListOffsetsOptions(
            stable ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED);
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> found =
        get(admin.listOffsets(request, options).all(), "listing the end offsets of " + partitions);
    Map<TopicPartition, Long> out = new HashMap<>();
    found.forEach(
        (tp, info) -> {
          if (info.offset() >= 0) {
            out.put(tp, info.offset());
          }
        });
    return out;
  }

  /** The share group's members now (0 for a group that does not exist). */
  public int shareGroupMemberCount(String groupId) {
    try {
      return get(
              admin.describeShareGroups(List.of(groupId)).describedGroups().get(groupId),
              "describing share group " + groupId)
          .members()
          .size();
    } catch (ConnectException e) {
      if (e.getCause() instanceof GroupIdNotFoundException) {
        return 0;
      }
      throw e;
    }
  }

  /** The classic consumer group's committed offsets; empty when it has none or does not exist. */
  public Map<TopicPartition, Long> consumerGroupOffsets(String groupId) {
    Map<TopicPartition, OffsetAndMetadata> committed =
        get(
            admin.listConsumerGroupOffsets(groupId).partitionsToOffsetAndMetadata(),
            "listing the committed offsets of consumer group " + groupId);
    Map<TopicPartition, Long> out = new HashMap<>();
    committed.forEach(
        (tp, om) -> {
          if (om != null && om.offset() >= 0) {
            out.put(tp, om.offset());
          }
        });
    return out;
  }

  /** Sets the share group's start offsets (the group must have no members). */
  public void alterShareGroupOffsets(String groupId, Map<TopicPartition, Long> offsets) {
    get(
        admin.alterShareGroupOffsets(groupId, offsets).all(),
        "setting the start offsets of share group " + groupId);
  }

  /**
   * Where {@code share.auto.offset.reset} ({@code earliest}, {@code latest} or {@code
   * by_duration:<ISO-8601 duration>}) starts each partition now: what a reset sets a share group's
   * start offsets to. A partition without a record that recent starts at its end, as the broker
   * does.
   */
  public Map<TopicPartition, Long> resetPositions(
      Collection<TopicPartition> partitions, String autoOffsetReset, long nowMs) {
    String reset = autoOffsetReset.trim().toLowerCase(Locale.ROOT);
    OffsetSpec spec;
    if (reset.equals("earliest")) {
      spec = OffsetSpec.earliest();
    } else if (reset.equals("latest")) {
      spec = OffsetSpec.latest();
    } else {
      Duration back = Duration.parse(autoOffsetReset.trim().substring("by_duration:".length()));
      spec = OffsetSpec.forTimestamp(nowMs - back.toMillis());
    }
    Map<TopicPartition, OffsetSpec> request = new HashMap<>();
    partitions.forEach(tp -> request.put(tp, spec));
    Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> found =
        get(admin.listOffsets(request).all(), "listing the offsets of " + partitions);
    Map<TopicPartition, Long> out = new HashMap<>();
    List<TopicPartition> noneThatRecent = new ArrayList<>();
    found.forEach(
        (tp, info) -> {
          if (info.offset() >= 0) {
            out.put(tp, info.offset());
          } else {
            noneThatRecent.add(tp);
          }
        });
    if (!noneThatRecent.isEmpty()) {
      out.putAll(resetPositions(noneThatRecent, "latest", nowMs));
    }
    return out;
  }

  private <T> T get(KafkaFuture<T> future, String doing) {
    try {
      return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw wrap(doing, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ConnectException("interrupted " + doing, e);
    } catch (TimeoutException e) {
      throw wrap(doing, e);
    }
  }

  private static ConnectException wrap(String doing, Throwable cause) {
    return new ConnectException(doing + " failed: " + cause, cause);
  }

  @Override
  public void close() {
    admin.close(CLOSE_TIMEOUT);
  }
}
