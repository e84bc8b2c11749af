package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DeadLetterProducerSettingsTest {

  private static final WorkerDefaults WORKER =
      new WorkerDefaults(
          Path.of("/etc/kafka/connect-distributed.properties"),
          Map.of(
              "bootstrap.servers", "worker:9092",
              "security.protocol", "SASL_SSL",
              "sasl.mechanism", "SCRAM-SHA-512",
              "group.id", "connect-cluster",
              "producer.compression.type", "lz4",
              "producer.linger.ms", "20",
              "producer.sasl.mechanism", "PLAIN",
              "consumer.max.poll.records", "200"));

  @Test
  void eachLayerOverridesTheOneBelow() {
    Map<String, String> connector =
        Map.of(
            "share.consumer.bootstrap.servers", "queues:9092",
            "share.consumer.client.id", "the-share-consumer",
            "share.consumer.max.poll.records", "50",
            "producer.override.compression.type", "zstd",
            "producer.override.client.id", "orders-dlq",
            "consumer.override.fetch.min.bytes", "1024");
    Map<String, Object> s = DeadLetterProducerSettings.layer(WORKER, connector);
    assertEquals("queues:9092", s.get("bootstrap.servers")); // share.consumer.* over the worker
    assertEquals("SASL_SSL", s.get("security.protocol")); // worker connection settings
    assertEquals("PLAIN", s.get("sasl.mechanism")); // worker producer.* over the top level
    assertEquals("20", s.get("linger.ms")); // worker producer.*
    assertEquals("zstd", s.get("compression.type")); // producer.override.* over producer.*
    assertEquals("orders-dlq", s.get("client.id")); // only producer.override.* names the client
    // Consumer settings of any layer are not a producer's.
    assertFalse(s.containsKey("max.poll.records"));
    assertFalse(s.containsKey("fetch.min.bytes"));
    assertFalse(s.containsKey("group.id"));
  }

  @Test
  void withoutOverridesTheShareConsumersClientIdIsNotTaken() {
    Map<String, Object> s =
        DeadLetterProducerSettings.layer(WORKER, Map.of("share.consumer.client.id", "consumer"));
    assertFalse(s.containsKey("client.id"), s.toString());
    assertEquals("worker:9092", s.get("bootstrap.servers"));
    assertEquals("lz4", s.get("compression.type"));
  }
}
