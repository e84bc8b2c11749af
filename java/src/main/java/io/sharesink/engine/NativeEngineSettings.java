package io.sharesink.engine;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Which Kafka client settings the native engine reads. It ignores every other key it is given
 * (Kafka's own clients only warn about unknown ones too), so the caller names the rest to the
 * operator instead of dropping them silently.
 *
 * <p>Keep in step with {@code rust/engine/src/config.rs} ({@code ConsumerConfig::from_properties})
 * and {@code rust/engine/src/security.rs}; {@code NativeEngineSettingsTest} lists them again.
 */
public final class NativeEngineSettings {

  /** Kafka client settings the engine reads, by their Kafka names. */
  static final Set<String> KAFKA_SETTINGS =
      Set.of(
          "bootstrap.servers",
          "group.id",
          "client.id",
          "client.rack",
          "max.poll.records",
          "fetch.max.bytes",
          "fetch.min.bytes",
          "fetch.max.wait.ms",
          "request.timeout.ms",
          "security.protocol",
          "sasl.mechanism",
          "sasl.jaas.config",
          "ssl.endpoint.identification.algorithm",
          "ssl.truststore.type",
          "ssl.truststore.location",
          "ssl.truststore.password",
          "ssl.truststore.certificates",
          "ssl.keystore.type",
          "ssl.keystore.location",
          "ssl.keystore.password",
          "ssl.keystore.key",
          "ssl.keystore.certificate.chain",
          "ssl.key.password");

  /** The engine's own settings (no Kafka client has them). */
  static final Set<String> ENGINE_SETTINGS =
      Set.of(
          "share.acquire.mode",
          "share.fetch.max.wait.held.ms",
          "share.fetch.wait.initial.ms",
          "share.fetch.acknowledge.first",
          "share.gaps.fold",
          "share.fetch.bytes.adaptive",
          "share.fetch.batch.size",
          "share.buffer.max.records",
          "share.buffer.max.bytes",
          "share.buffer.hold.max.ms",
          "share.memory.max.bytes",
          "share.buffer.max.lock.fraction", // retired: the engine warns about it itself
          "share.close.timeout.ms",
          "share.response.max.bytes",
          "share.partition.stall.ms");

  private NativeEngineSettings() {}

  /** Whether the native engine reads {@code key}. */
  public static boolean reads(String key) {
    return KAFKA_SETTINGS.contains(key) || ENGINE_SETTINGS.contains(key);
  }

  /** The keys of {@code settings} the native engine does not read, sorted. */
  public static List<String> unread(Map<String, ?> settings) {
    return settings.keySet().stream().filter(k -> !reads(k)).sorted().toList();
  }
}
