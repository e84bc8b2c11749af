package io.sharesink.connect;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.config.types.Password;

/**
 * The share consumer's Kafka client settings, layered as the classic sink runtime layers its
 * consumer's (Connect's {@code Worker.baseConsumerConfigs}), lowest first:
 *
 * <ol>
 *   <li>the worker's connection settings ({@link WorkerDefaults#clientSettings()}; the runtime
 *       gives its consumers only {@code bootstrap.servers} from the top level, sharesink has always
 *       taken the security settings too, so a worker that secures only its own clients still
 *       works);
 *   <li>the worker's {@code consumer.*} settings;
 *   <li>the connector's {@code consumer.override.*} settings (the caller checks them against the
 *       worker's override policy first, see {@link ClientOverridePolicy});
 *   <li>the connector's {@code share.consumer.*} settings, sharesink's own explicit keys.
 * </ol>
 *
 * <p>Settings that make no sense for a share-group member ({@link #NOT_FOR_SHARE_CONSUMER}) are
 * left out and reported in {@link #ignored()}, with the key the operator wrote, for a WARN: a
 * connector moved from the classic runtime often carries some of them ({@code
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

  private final Map<String, Object> settings;
  private final Map<String, String> origins;
  private final List<String> ignored;

  private ShareConsumerSettings(
      Map<String, Object> settings, Map<String, String> origins, List<String> ignored) {
    this.settings = settings;
    this.origins = origins;
    this.ignored = ignored;
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
    m.put("isolation.level", "share groups read committed records only");
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
    Map<String, Object> settings = new LinkedHashMap<>();
    Map<String, String> origins = new LinkedHashMap<>();
    worker.clientSettings().forEach((k, v) -> put(settings, origins, k, v, "worker " + k));
    put(settings, origins, worker.settings(), WORKER_CONSUMER_PREFIX, "worker ");
    put(settings, origins, connectorOriginals, CONNECTOR_OVERRIDE_PREFIX, "");
    put(settings, origins, connectorOriginals, ShareSinkConfig.CONSUMER_PREFIX, "");
    List<String> ignored = new ArrayList<>();
    for (Map.Entry<String, String> e : NOT_FOR_SHARE_CONSUMER.entrySet()) {
      String origin = origins.remove(e.getKey());
      if (settings.remove(e.getKey()) != null && origin != null) {
        ignored.add(origin + " (" + e.getValue() + ")");
      }
    }
    return new ShareConsumerSettings(
        Collections.unmodifiableMap(settings),
        Collections.unmodifiableMap(origins),
        List.copyOf(ignored));
  }

  private static void put(
      Map<String, Object> settings,
      Map<String, String> origins,
      Map<String, ?> source,
      String prefix,
      String originLabel) {
    source.forEach(
        (key, value) -> {
          if (key.startsWith(prefix) && key.length() > prefix.length() && value != null) {
            // consumer.override.* also starts with consumer.: a worker file does not hold those,
            // but never read an override as a worker setting.
            if (prefix.equals(WORKER_CONSUMER_PREFIX)
                && key.startsWith(CONNECTOR_OVERRIDE_PREFIX)) {
              return;
            }
            Object v = value instanceof Password p ? p.value() : value;
            String clientKey = key.substring(prefix.length());
            put(settings, origins, clientKey, v.toString().trim(), originLabel + key);
          }
        });
  }

  private static void put(
      Map<String, Object> settings,
      Map<String, String> origins,
      String key,
      Object value,
      String origin) {
    settings.put(key, value);
    origins.put(key, origin);
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
}
