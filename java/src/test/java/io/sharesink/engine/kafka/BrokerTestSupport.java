package io.sharesink.engine.kafka;

import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Assumptions;

/**
 * Shared set-up for tests against a real broker (JUnit tag {@code broker}).
 *
 * <p>Scheme: the bootstrap address comes from the system property or environment variable {@code
 * SHARESINK_BOOTSTRAP} (for example from {@code python3 tests/harness/cluster.py up}, whose env
 * file holds {@code BOOTSTRAP=...}). When it is missing the test is skipped, unless {@code
 * SHARESINK_REQUIRE_BROKER=1}, which makes it fail. The default build excludes the tag; run them
 * with {@code -Dgroups=broker -DSHARESINK_BOOTSTRAP=127.0.0.1:29092}.
 */
public final class BrokerTestSupport {

  private BrokerTestSupport() {}

  public static String bootstrap() {
    return setting("BOOTSTRAP", "no broker to test against");
  }

  /**
   * The test environment's {@code SHARESINK_<name>} (system property, else environment). When it is
   * missing the test is skipped ({@code why} says what is missing), or fails when {@code
   * SHARESINK_REQUIRE_BROKER=1}: a run that must test against a broker never skips silently.
   */
  public static String setting(String name, String why) {
    String key = "SHARESINK_" + name;
    String value = System.getProperty(key, System.getenv(key));
    if (value == null || value.isBlank()) {
      String require =
          System.getProperty("SHARESINK_REQUIRE_BROKER", System.getenv("SHARESINK_REQUIRE_BROKER"));
      if ("1".equals(require)) {
        fail(key + " is not set but SHARESINK_REQUIRE_BROKER=1 (" + why + ")");
      }
      Assumptions.abort(key + " not set: " + why);
    }
    return value;
  }

  public static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  public static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      admin
          .createTopics(List.of(new NewTopic(topic, partitions, (short) 1)))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
  }

  /** Sets share-group configs (before its first member joins, for the offset reset). */
  public static void configureGroup(String bootstrap, String group, Map<String, String> configs)
      throws Exception {
    List<AlterConfigOp> ops = new ArrayList<>();
    configs.forEach(
        (k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
    try (Admin admin = admin(bootstrap)) {
      admin
          .incrementalAlterConfigs(
              Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
  }

  public static void produce(String bootstrap, String topic, Collection<String> values)
      throws Exception {
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
      int i = 0;
      for (String value : values) {
        producer
            .send(new ProducerRecord<>(topic, null, "k" + i++, value))
            .get(30, TimeUnit.SECONDS);
      }
    }
  }

  public static Map<String, Object> consumerConfig(String bootstrap, String group) {
    return Map.of("bootstrap.servers", bootstrap, "group.id", group);
  }

  static String utf8(byte[] bytes) {
    return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
  }

  static Duration seconds(long s) {
    return Duration.ofSeconds(s);
  }

  private static Admin admin(String bootstrap) {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
  }
}
