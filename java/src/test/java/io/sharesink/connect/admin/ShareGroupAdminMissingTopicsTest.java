package io.sharesink.connect.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.admin.MockAdminClient;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;

class ShareGroupAdminMissingTopicsTest {

  @Test
  void namesOnlyTheTopicsTheClusterDoesNotKnow() {
    Node broker = new Node(0, "localhost", 9092);
    MockAdminClient cluster = new MockAdminClient(List.of(broker), broker);
    cluster.addTopic(
        false,
        "refunds",
        List.of(new TopicPartitionInfo(0, broker, List.of(broker), List.of(broker))),
        Map.of());
    try (ShareGroupAdmin admin = new ShareGroupAdmin(cluster, Duration.ofSeconds(5))) {
      assertEquals(
          List.of("orders", "audit"), admin.missingTopics(List.of("orders", "refunds", "audit")));
      assertEquals(List.of(), admin.missingTopics(List.of("refunds")));
    }
  }
}
