package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.MockAdminClient;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;

class DeadLetterTopicTest {

  private static final Duration TIMEOUT = Duration.ofSeconds(5);
  private static final List<Node> BROKERS =
      List.of(new Node(0, "b0", 9092), new Node(1, "b1", 9092), new Node(2, "b2", 9092));

  private static TopicDescription describe(MockAdminClient admin, String topic) throws Exception {
    return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
  }

  @Test
  void aMissingTopicIsCreatedWithOnePartitionAndTheConfiguredReplicas() throws Exception {
    try (MockAdminClient admin = new MockAdminClient(BROKERS, BROKERS.get(0))) {
      DeadLetterTopic.ensure(admin, "orders-dlq", (short) 2, TIMEOUT);

      TopicDescription created = describe(admin, "orders-dlq");
      assertEquals(DeadLetterTopic.PARTITIONS, created.partitions().size());
      assertEquals(2, created.partitions().get(0).replicas().size());
    }
  }

  @Test
  void anExistingTopicIsLeftAsItIs() throws Exception {
    try (MockAdminClient admin = new MockAdminClient(BROKERS, BROKERS.get(0))) {
      List<TopicPartitionInfo> partitions =
          List.of(
              new TopicPartitionInfo(0, BROKERS.get(0), BROKERS, BROKERS),
              new TopicPartitionInfo(1, BROKERS.get(1), BROKERS, BROKERS));
      admin.addTopic(false, "orders-dlq", partitions, Map.of());

      DeadLetterTopic.ensure(admin, "orders-dlq", (short) 1, TIMEOUT);

      assertEquals(2, describe(admin, "orders-dlq").partitions().size());
    }
  }

  @Test
  void moreReplicasThanBrokersFailWithTheKeyToChange() {
    try (MockAdminClient admin = new MockAdminClient(BROKERS.subList(0, 1), BROKERS.get(0))) {
      ConnectException e =
          assertThrows(
              ConnectException.class,
              () -> DeadLetterTopic.ensure(admin, "orders-dlq", (short) 3, TIMEOUT));
      assertTrue(
          e.getMessage().contains("'orders-dlq'")
              && e.getMessage()
                  .contains(SinkDriverConfig.DLQ_TOPIC_REPLICATION_FACTOR_CONFIG + "=3"),
          e.getMessage());
    }
  }

  @Test
  void minusOneLeavesTheReplicasToTheBroker() throws Exception {
    try (MockAdminClient admin = new MockAdminClient(BROKERS, BROKERS.get(0))) {
      DeadLetterTopic.ensure(admin, "orders-dlq", (short) -1, TIMEOUT);

      assertEquals(DeadLetterTopic.PARTITIONS, describe(admin, "orders-dlq").partitions().size());
    }
  }

  @Test
  void theReplicationFactorIsValidatedAndDefaultsToConnects() {
    assertEquals(3, new SinkDriverConfig(Map.of()).dlqTopicReplicationFactor());
    assertEquals(
        -1,
        new SinkDriverConfig(Map.of(SinkDriverConfig.DLQ_TOPIC_REPLICATION_FACTOR_CONFIG, "-1"))
            .dlqTopicReplicationFactor());
    org.apache.kafka.common.config.ConfigException e =
        assertThrows(
            org.apache.kafka.common.config.ConfigException.class,
            () ->
                new SinkDriverConfig(
                    Map.of(SinkDriverConfig.DLQ_TOPIC_REPLICATION_FACTOR_CONFIG, "0")));
    assertTrue(e.getMessage().contains(SinkDriverConfig.DLQ_TOPIC_REPLICATION_FACTOR_CONFIG));
  }
}
