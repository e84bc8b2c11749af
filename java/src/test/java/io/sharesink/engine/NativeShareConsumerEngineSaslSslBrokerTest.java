package io.sharesink.engine;

import static io.sharesink.engine.kafka.BrokerTestSupport.bootstrap;
import static io.sharesink.engine.kafka.BrokerTestSupport.configureGroup;
import static io.sharesink.engine.kafka.BrokerTestSupport.createTopic;
import static io.sharesink.engine.kafka.BrokerTestSupport.produce;
import static io.sharesink.engine.kafka.BrokerTestSupport.unique;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.engine.kafka.BrokerTestSupport;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.types.Password;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The native engine over SASL_SSL (SCRAM) with a Java truststore (JKS and PKCS12), which {@link
 * KafkaClientConfigTranslator} turns into PEM. Needs the harness's SASL_SSL listener ({@code
 * cluster.py up --sasl-ssl}): {@code SASL_SSL_BOOTSTRAP}, {@code TRUSTSTORE_JKS}, {@code
 * TRUSTSTORE_P12}, {@code TRUSTSTORE_PASSWORD}, {@code SCRAM_USER}, {@code SCRAM_PASSWORD} from
 * {@code build/cluster/env}, as system properties or environment, each prefixed {@code SHARESINK_};
 * skipped when they are missing, failed when {@code SHARESINK_REQUIRE_BROKER=1}.
 */
@Tag("broker")
class NativeShareConsumerEngineSaslSslBrokerTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  private static String setting(String name) {
    return BrokerTestSupport.setting(name, "no SASL_SSL listener");
  }

  private static Map<String, Object> saslSsl(
      String group, String store, String type, String user, String password) {
    Map<String, Object> config = new HashMap<>();
    config.put("bootstrap.servers", setting("SASL_SSL_BOOTSTRAP"));
    config.put("group.id", group);
    config.put("security.protocol", "SASL_SSL");
    config.put("sasl.mechanism", "SCRAM-SHA-512");
    config.put(
        "sasl.jaas.config",
        new Password(
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + user
                + "\" password=\""
                + password
                + "\";"));
    config.put("ssl.truststore.location", store);
    if (type != null) {
      config.put("ssl.truststore.type", type);
    }
    config.put("ssl.truststore.password", new Password(setting("TRUSTSTORE_PASSWORD")));
    return config;
  }

  private void consumesThrough(String store, String type) throws Exception {
    String group = unique("native-tls-group");
    String topic = unique("native-tls");
    createTopic(bootstrap(), topic, 1);
    configureGroup(bootstrap(), group, Map.of("share.auto.offset.reset", "earliest"));
    produce(bootstrap(), topic, List.of("a", "b", "c"));
    try (NativeShareConsumerEngine engine =
        new NativeShareConsumerEngine(
            saslSsl(group, store, type, setting("SCRAM_USER"), setting("SCRAM_PASSWORD")),
            List.of(topic))) {
      var seen = NativeShareConsumerEngineBrokerTest.pollUntil(engine, 3, Duration.ofSeconds(30));
      assertEquals(3, seen.size());
      List<AckResult> results =
          engine.acknowledgeSync(
              new Acknowledgements().add(topic, 0, 0, 2, AckType.ACCEPT), Duration.ofSeconds(10));
      assertTrue(results.get(0).ok(), results.toString());
    }
  }

  @Test
  void consumesOverSaslSslWithAJksTruststore() throws Exception {
    consumesThrough(setting("TRUSTSTORE_JKS"), null); // JKS: Kafka's default type
  }

  @Test
  void consumesOverSaslSslWithAPkcs12Truststore() throws Exception {
    consumesThrough(setting("TRUSTSTORE_P12"), "PKCS12");
  }

  @Test
  void aWrongPasswordIsAnAuthenticationError() {
    // Resolved outside assertThrows: a missing setting must skip the test, not fail it.
    Map<String, Object> config =
        saslSsl(
            unique("native-tls-bad"),
            setting("TRUSTSTORE_JKS"),
            null,
            setting("SCRAM_USER"),
            "not-the-password");
    NativeException e =
        assertThrows(
            NativeException.class,
            () -> new NativeShareConsumerEngine(config, List.of("t")).close());
    assertEquals(EngineException.Kind.AUTHENTICATION, e.kind(), e.toString());
    assertFalse(e.retriable());
  }
}
