package io.sharesink.connect;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.types.Password;

/**
 * The client settings of the producer that writes Connect's DLQ records ({@code share.dlq.mode}
 * {@code connect}), layered as the classic runtime layers its DLQ producer's (Connect's {@code
 * Worker.baseProducerConfigs}), lowest first:
 *
 * <ol>
 *   <li>the worker's connection settings ({@link WorkerDefaults#clientSettings()});
 *   <li>the worker's {@code producer.*} settings;
 *   <li>the connector's {@code share.consumer.*} settings: they name the cluster holding the share
 *       group, where the DLQ topic lives too;
 *   <li>the connector's {@code producer.override.*} settings. The runtime has already asked the
 *       worker's {@code connector.client.config.override.policy} about them: to it this is a source
 *       connector, whose producer overrides it checks when the connector is created.
 * </ol>
 *
 * Only keys a producer knows are kept (consumer-only ones would make it warn), and {@code
 * client.id} only from {@code producer.override.*}: a {@code share.consumer.client.id} is the share
 * consumer's.
 */
final class DeadLetterProducerSettings {

  /** The worker's prefix for the settings of the producers it builds. */
  static final String WORKER_PRODUCER_PREFIX = "producer.";

  /** The connector's prefix for its own producer settings (ConnectorConfig's). */
  static final String CONNECTOR_OVERRIDE_PREFIX = "producer.override.";

  private DeadLetterProducerSettings() {}

  static Map<String, Object> layer(WorkerDefaults worker, Map<String, ?> connectorOriginals) {
    Set<String> known = ProducerConfig.configNames();
    Map<String, Object> settings = new HashMap<>();
    worker.clientSettings().forEach((key, value) -> settings.put(key, value));
    worker
        .settings()
        .forEach(
            (key, value) -> {
              if (!key.startsWith(CONNECTOR_OVERRIDE_PREFIX)) {
                putPrefixed(settings, WORKER_PRODUCER_PREFIX, key, value);
              }
            });
    connectorOriginals.forEach(
        (key, value) -> putPrefixed(settings, ShareSinkConfig.CONSUMER_PREFIX, key, value));
    settings.remove(ProducerConfig.CLIENT_ID_CONFIG);
    connectorOriginals.forEach(
        (key, value) -> putPrefixed(settings, CONNECTOR_OVERRIDE_PREFIX, key, value));
    settings.keySet().retainAll(known);
    return settings;
  }

  private static void putPrefixed(
      Map<String, Object> settings, String prefix, String key, Object value) {
    if (value == null || !key.startsWith(prefix) || key.length() == prefix.length()) {
      return;
    }
    Object v = value instanceof Password p ? p.value() : value;
    settings.put(key.substring(prefix.length()), v.toString().trim());
  }
}
