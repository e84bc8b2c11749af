package io.sharesink.connect;

import io.sharesink.connect.admin.GroupSettings;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.kafka.common.config.ConfigException;

/**
 * The share consumer's Kafka client settings, layered as the classic sink runtime layers its
 * consumer's (Connect's {@code Worker.baseConsumerConfigs}), lowest first:
 *
 * <ol>
 *   <li>the worker's {@code bootstrap.servers} (its other top-level settings, security included,
 *       are the worker's own clients': a connector's consumer never acts as the worker's
 *       principal);
 *   <li>the worker's {@code consumer.*} settings;
 *   <li>the connector's {@code consumer.override.*} settings;
 *   <li>the connector's {@code share.consumer.*} settings, sharesink's own name for the same thing.
 * </ol>
 *
 * <p>The last two go through the worker's override policy first ({@link ConnectorClients}).
 * Settings that make no sense for a share-group member ({@link #NOT_FOR_SHARE_CONSUMER}) are left
 * out and reported in {@link #ignored()}, with the key the operator wrote, for a WARN: a connector
 * moved from the classic runtime often carries some of them ({@code
 * consumer.override.auto.offset.reset}), and refusing them would break the one-flag switch, while
 * passing them on would make Kafka's share consumer refuse to start.
 */
final class ShareConsumerSettings {

  /** The worker's prefix for the settings of the consumers it builds for sink tasks. */
  public static final String WORKER_CONSUMER_PREFIX = "consumer.";

  /** The connector's prefix for its own consumer settings (ConnectorConfig's). */
  public static final String CONNECTOR_OVERRIDE_PREFIX = "consumer.override.";

  /**
   * Consumer settings a share consumer does not take, and why. Kafka's {@code ShareConsumerConfig}
   * refuses most of them outright; the rest sharesink sets itself.
   */
  static final Map<String, String> NOT_FOR_SHARE_CONSUMER = notForShareConsumer();

  /** Kafka's consumer setting for how often the pattern is matched against the cluster again. */
  static final String METADATA_MAX_AGE_MS = "metadata.max.age.ms";

  /** Kafka's default for {@value #METADATA_MAX_AGE_MS}. */
  static final long METADATA_MAX_AGE_MS_DEFAULT = 300_000;

  /** Kafka's consumer setting for how transactional records are read. */
  static final String ISOLATION_LEVEL = "isolation.level";

  private final Map<String, Object> settings;
  private final Map<String, String> origins;
  private final List<String> ignored;
  private final GroupSettings.Isolation isolationLevel;

  private ShareConsumerSettings(
      Map<String, Object> settings,
      Map<String, String> origins,
      List<String> ignored,
      GroupSettings.Isolation isolationLevel) {
    this.settings = settings;
    this.origins = origins;
    this.ignored = ignored;
    this.isolationLevel = isolationLevel;
  }

  private static Map<String, String> notForShareConsumer() {
    Map<String, String> m = new TreeMap<>();
    m.put(
        "group.protocol",
        "consumer.override.group.protocol is the switch to share mode, not a client setting");
    m.put("group.id", "the share group is share.group.id (default connect-share-<connector name>)");
    m.put("group.instance.id", "share groups have no static membership");
    m.put("group.remote.assignor", "share groups have no client-chosen assignor");
    m.put("partition.assignment.strategy", "share groups have no client-side assignment");
    m.put("session.timeout.ms", "a share group's session timeout is the broker's");
    m.put("heartbeat.interval.ms", "a share group's heartbeat interval is the broker's");
    m.put("auto.offset.reset", "the share group's start position is share.auto.offset.reset");
    m.put("enable.auto.commit", "records are acknowledged, never committed");
    m.put("auto.commit.interval.ms", "records are acknowledged, never committed");
    m.put(
        ISOLATION_LEVEL,
        "a share group reads at its share.isolation.level, which the connector sets from this");
    m.put("interceptor.classes", "Kafka's share consumer takes no interceptors");
    m.put("key.deserializer", "records reach the task's converters as bytes");
    m.put("value.deserializer", "records reach the task's converters as bytes");
    m.put("share.acknowledgement.mode", "sharesink acknowledges explicitly");
    return Collections.unmodifiableMap(m);
  }

  /**
   * Layers the settings.
   *
   * @param worker the worker's configuration
   * @param connectorOriginals the connector's (or task's) configuration as given
   */
  static ShareConsumerSettings layer(WorkerDefaults worker, Map<String, ?> connectorOriginals) {
    ConnectorClients.ClientLayers layers = new ConnectorClients.ClientLayers();
    layers.put(
        ConnectorClients.BOOTSTRAP_SERVERS,
        worker.bootstrapServers(),
        "worker " + ConnectorClients.BOOTSTRAP_SERVERS);
    layers.putPrefixed(
        worker.settings(), WORKER_CONSUMER_PREFIX, "worker ", CONNECTOR_OVERRIDE_PREFIX);
    layers.putPrefixed(connectorOriginals, CONNECTOR_OVERRIDE_PREFIX, "", null);
    layers.putPrefixed(connectorOriginals, ShareSinkConfig.CONSUMER_PREFIX, "", null);
    GroupSettings.Isolation isolationLevel = null;
    Object level = layers.settings().get(ISOLATION_LEVEL);
    if (level != null) {
      isolationLevel =
          new GroupSettings.Isolation(level.toString().trim(), layers.origin(ISOLATION_LEVEL));
    }
    List<String> ignored = new ArrayList<>();
    for (Map.Entry<String, String> e : NOT_FOR_SHARE_CONSUMER.entrySet()) {
      String origin = layers.origin(e.getKey());
      if (layers.remove(e.getKey()) != null
          && origin != null
          && !e.getKey().equals(ISOLATION_LEVEL)) {
        ignored.add(origin + " (" + e.getValue() + ")");
      }
    }
    return new ShareConsumerSettings(
        layers.settings(), layers.origins(), List.copyOf(ignored), isolationLevel);
  }

  /**
   * The {@code isolation.level} the worker's {@code consumer.*} or the connector asks for, the
   * connector's winning, with the key that set it (not checked here: {@link
   * GroupSettings#problems}); empty when nobody sets one (a classic consumer then reads at Kafka's
   * default, {@code read_uncommitted}). A share consumer does not take the setting: a share group
   * reads at its {@code share.isolation.level}, which the connector sets from this.
   */
  public Optional<GroupSettings.Isolation> isolationLevel() {
    return Optional.ofNullable(isolationLevel);
  }

  /** The settings for the share consumer, by Kafka client name. */
  public Map<String, Object> settings() {
    return settings;
  }

  /**
   * Where a setting came from, as the operator wrote it: {@code worker consumer.max.poll.records},
   * {@code consumer.override.client.id}, {@code share.consumer.fetch.max.bytes}, {@code worker
   * ssl.truststore.location}; null for a key these settings do not hold.
   */
  public String origin(String clientKey) {
    return origins.get(clientKey);
  }

  /** The settings left out, each with where it was set and why, for a WARN. */
  public List<String> ignored() {
    return ignored;
  }

  /**
   * {@value #METADATA_MAX_AGE_MS} among the client settings (so {@code
   * share.consumer.metadata.max.age.ms}), else Kafka's default.
   */
  static long metadataMaxAgeMs(Map<String, Object> clientSettings) {
    Object value = clientSettings.get(METADATA_MAX_AGE_MS);
    if (value == null || value.toString().isBlank()) {
      return METADATA_MAX_AGE_MS_DEFAULT;
    }
    try {
      long ms = Long.parseLong(value.toString().trim());
      if (ms > 0) {
        return ms;
      }
    } catch (NumberFormatException e) {
      // fall through
    }
    throw new ConfigException(
        ShareSinkConfig.CONSUMER_PREFIX + METADATA_MAX_AGE_MS,
        value,
        "must be a positive number of milliseconds");
  }
}
