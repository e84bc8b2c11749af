package io.sharesink.connect.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.kafka.BrokerTestSupport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The group set-up against a real 4.4 broker: configs, bounds, migration, lag. */
@Tag("broker")
class ShareGroupSetupBrokerTest {

  private static ShareGroupAdmin admin(String bootstrap) {
    return ShareGroupAdmin.create(
        Map.of("bootstrap.servers", bootstrap), "setup-test", Duration.ofSeconds(30));
  }

  @Test
  void setsTheGroupConfigsAndReadsTheClusterFacts() throws Exception {
    String bootstrap = BrokerTestSupport.bootstrap();
    String group = BrokerTestSupport.unique("setup");
    String dlq = BrokerTestSupport.unique("dlq.setup");
    try (ShareGroupAdmin admin = admin(bootstrap)) {
      // A DLQ topic that does not exist yet: auto leaves the DLQ to the tasks.
      GroupSettings settings = new GroupSettings("earliest", 40_000, 4, "auto", dlq, 5_000);
      assertEquals(
          "connect", ShareGroupSetup.apply(admin, group, settings, List.of("t"), null).dlqMode());
      // broker mode says why it cannot work.
      ConnectException e =
          assertThrows(
              ConnectException.class,
              () ->
                  ShareGroupSetup.apply(
                      admin,
                      group,
                      new GroupSettings("earliest", null, null, "broker", dlq, 5_000),
                      List.of("t"),
                      null));
      assertTrue(e.getMessage().contains("does not exist"), e.getMessage());
      try (Admin raw =
          Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
        raw.createTopics(
                List.of(
                    new NewTopic(dlq, 1, (short) 1)
                        .configs(Map.of("errors.deadletterqueue.group.enable", "true"))))
            .all()
            .get(30, TimeUnit.SECONDS);
      }
      ShareGroupSetup.Result result =
          ShareGroupSetup.apply(admin, group, settings, List.of("t"), null);
      assertEquals("broker", result.dlqMode(), "4.4 with share.version 2 and the dlq. prefix");
      ClusterFacts facts = admin.facts(group);
      assertEquals(2, facts.shareVersion().getAsInt());
      assertEquals("dlq.", facts.dlqPrefix());
      assertEquals("earliest", facts.groupConfigs().get("share.auto.offset.reset"));
      assertEquals("40000", facts.groupConfigs().get("share.record.lock.duration.ms"));
      assertEquals("4", facts.groupConfigs().get("share.delivery.count.limit"));
      assertEquals(dlq, facts.groupConfigs().get("errors.deadletterqueue.topic.name"));
      assertEquals("true", facts.groupConfigs().get("errors.deadletterqueue.copy.record.enable"));
      // No window given: the broker's default (2000) raised to its maximum (4000 on Kafka 4.4).
      assertEquals("4000", facts.groupConfigs().get("share.partition.max.record.locks"));
      assertEquals(4000, result.recordLocks());

      // Switching to connect mode removes the broker DLQ again.
      GroupSettings connect = new GroupSettings("earliest", null, null, "connect", dlq, 5_000);
      ShareGroupSetup.apply(admin, group, connect, List.of("t"), null);
      String after = admin.facts(group).groupConfigs().get("errors.deadletterqueue.topic.name");
      assertTrue(after == null || after.isEmpty(), after);
    }
  }

  /**
   * A connector asking for read_committed sets the group's share.isolation.level: a share consumer
   * of the group never gets an aborted record, and stops at an open transaction, whose records the
   * lag then leaves out when counted to the last stable offset. Asked for nothing, the connector
   * removes the level again.
   */
  @Test
  void theIsolationLevelAskedForIsTheGroupsAndLagCountsToTheStableOffset() throws Exception {
    String bootstrap = BrokerTestSupport.bootstrap();
    String topic = BrokerTestSupport.unique("isolation");
    String group = "connect-share-" + topic;
    BrokerTestSupport.createTopic(bootstrap, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    Map<String, Object> txnConfig = new java.util.HashMap<>();
    txnConfig.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    txnConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-txn");
    try (ShareGroupAdmin admin = admin(bootstrap);
        KafkaProducer<String, String> txn =
            new KafkaProducer<>(txnConfig, new StringSerializer(), new StringSerializer())) {
      GroupSettings committed =
          new GroupSettings("earliest", null, null, "connect", "", 5_000)
              .withIsolation(
                  new GroupSettings.Isolation(
                      "read_committed", "consumer.override.isolation.level"));
      ShareGroupSetup.apply(admin, group, committed, List.of(topic), null);
      assertEquals(
          "read_committed", admin.facts(group).groupConfigs().get("share.isolation.level"));

      txn.initTransactions();
      txn.beginTransaction();
      for (int i = 0; i < 4; i++) {
        txn.send(new ProducerRecord<>(topic, 0, null, "aborted-" + i));
      }
      txn.abortTransaction();
      BrokerTestSupport.produce(bootstrap, topic, List.of("plain-0", "plain-1"));
      txn.beginTransaction();
      for (int i = 0; i < 5; i++) {
        txn.send(new ProducerRecord<>(topic, 0, null, "open-" + i));
      }
      txn.flush();

      List<String> received = new ArrayList<>();
      try (KafkaShareConsumer<String, String> consumer =
          new KafkaShareConsumer<>(
              Map.of(
                  ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                  ConsumerConfig.GROUP_ID_CONFIG, group),
              new StringDeserializer(),
              new StringDeserializer())) {
        consumer.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 30_000;
        while (received.size() < 2 && System.currentTimeMillis() < deadline) {
          consumer.poll(Duration.ofMillis(500)).forEach(r -> received.add(r.value()));
          consumer.commitSync();
        }
        assertEquals(List.of("plain-0", "plain-1"), received, "nothing aborted, nothing open");

        // The broker counts the open transaction's 5 records (and its lag runs to the log's
        // end); counted to the last stable offset the group has nothing left to do.
        long until = System.currentTimeMillis() + 30_000;
        Long stableLag = null;
        Long brokerLag = null;
        while (System.currentTimeMillis() < until) {
          brokerLag = admin.shareGroupOffsets(group, false).get(tp).lag().orElse(null);
          stableLag = admin.shareGroupOffsets(group, true).get(tp).lag().orElse(null);
          if (Long.valueOf(0).equals(stableLag) && Long.valueOf(5).equals(brokerLag)) {
            break;
          }
          Thread.sleep(200);
        }
        assertEquals(5L, brokerLag);
        assertEquals(0L, stableLag);

        txn.commitTransaction();
        deadline = System.currentTimeMillis() + 30_000;
        while (received.size() < 7 && System.currentTimeMillis() < deadline) {
          consumer.poll(Duration.ofMillis(500)).forEach(r -> received.add(r.value()));
          consumer.commitSync();
        }
      }
      assertEquals(
          List.of("plain-0", "plain-1", "open-0", "open-1", "open-2", "open-3", "open-4"),
          received);

      // Nobody asks any more: the level goes, the group reads at Kafka's default.
      ShareGroupSetup.apply(
          admin,
          group,
          new GroupSettings("earliest", null, null, "connect", "", 5_000),
          List.of(topic),
          null);
      assertEquals(
          "read_uncommitted", admin.facts(group).groupConfigs().get("share.isolation.level"));
    }
  }

  @Test
  void outOfBoundsSettingsFailNamingKeyAndBound() {
    String bootstrap = BrokerTestSupport.bootstrap();
    String group = BrokerTestSupport.unique("bounds");
    try (ShareGroupAdmin admin = admin(bootstrap)) {
      GroupSettings settings = new GroupSettings("earliest", 120_000, 50, "auto", "", 5_000);
      ConnectException e =
          assertThrows(
              ConnectException.class,
              () -> ShareGroupSetup.apply(admin, group, settings, List.of("t"), null));
      assertTrue(e.getMessage().contains("share.record.lock.duration.ms"), e.getMessage());
      assertTrue(e.getMessage().contains("60000"), e.getMessage());
      assertTrue(e.getMessage().contains("share.delivery.count.limit"), e.getMessage());
    }
  }

  /**
   * The classic group committed 3 of 10 records on partition 0 and 7 on partition 1; partition 2
   * has no commit. The share group then starts at 3 and 7, and from the beginning on 2.
   */
  @Test
  void firstStartSeedsTheShareGroupFromTheClassicGroup() throws Exception {
    String bootstrap = BrokerTestSupport.bootstrap();
    String topic = BrokerTestSupport.unique("migrate");
    String classic = "connect-" + topic;
    String group = "connect-share-" + topic;
    BrokerTestSupport.createTopic(bootstrap, topic, 3);
    List<String> values = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      values.add("v" + i);
    }
    BrokerTestSupport.produce(bootstrap, topic, values); // spread over the partitions
    try (Admin raw = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      raw.alterConsumerGroupOffsets(
              classic,
              Map.of(
                  new TopicPartition(topic, 0), new OffsetAndMetadata(3),
                  new TopicPartition(topic, 1), new OffsetAndMetadata(7)))
          .all()
          .get(30, TimeUnit.SECONDS);
    }
    try (ShareGroupAdmin admin = admin(bootstrap)) {
      GroupSettings settings = new GroupSettings("earliest", null, null, "auto", "", 5_000);
      ShareGroupSetup.Result result =
          ShareGroupSetup.apply(admin, group, settings, List.of(topic), classic);
      assertEquals(
          Map.of(new TopicPartition(topic, 0), 3L, new TopicPartition(topic, 1), 7L),
          result.seeded());
      Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin.shareGroupOffsets(group);
      assertEquals(3L, offsets.get(new TopicPartition(topic, 0)).startOffset());
      assertEquals(7L, offsets.get(new TopicPartition(topic, 1)).startOffset());

      // A second start finds state and changes nothing.
      assertEquals(
          Map.of(),
          ShareGroupSetup.apply(admin, group, settings, List.of(topic), classic).seeded());

      // A share consumer of the group gets exactly the records the classic group had not
      // consumed: partition 0 from 3, partition 1 from 7, partition 2 from the start.
      long expected = 0;
      Map<TopicPartition, Long> ends;
      try (Admin raw =
          Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
        ends = endOffsets(raw, topic);
      }
      expected =
          (ends.get(new TopicPartition(topic, 0)) - 3)
              + (ends.get(new TopicPartition(topic, 1)) - 7)
              + ends.get(new TopicPartition(topic, 2));
      int received = 0;
      long minOffsetP0 = Long.MAX_VALUE;
      long minOffsetP1 = Long.MAX_VALUE;
      try (KafkaShareConsumer<String, String> consumer =
          new KafkaShareConsumer<>(
              Map.of(
                  ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                  ConsumerConfig.GROUP_ID_CONFIG, group),
              new StringDeserializer(),
              new StringDeserializer())) {
        consumer.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 30_000;
        while (received < expected && System.currentTimeMillis() < deadline) {
          for (var record : consumer.poll(Duration.ofMillis(500))) {
            received++;
            if (record.partition() == 0) {
              minOffsetP0 = Math.min(minOffsetP0, record.offset());
            } else if (record.partition() == 1) {
              minOffsetP1 = Math.min(minOffsetP1, record.offset());
            }
          }
          consumer.commitSync();
        }
      }
      assertEquals(expected, received);
      if (ends.get(new TopicPartition(topic, 0)) > 3) {
        assertEquals(3L, minOffsetP0);
      }
      if (ends.get(new TopicPartition(topic, 1)) > 7) {
        assertEquals(7L, minOffsetP1);
      }
    }
  }

  private static Map<TopicPartition, Long> endOffsets(Admin admin, String topic) throws Exception {
    Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> request =
        new java.util.HashMap<>();
    for (int p = 0; p < 3; p++) {
      request.put(new TopicPartition(topic, p), org.apache.kafka.clients.admin.OffsetSpec.latest());
    }
    Map<TopicPartition, Long> out = new java.util.HashMap<>();
    admin
        .listOffsets(request)
        .all()
        .get(30, TimeUnit.SECONDS)
        .forEach((tp, info) -> out.put(tp, info.offset()));
    return out;
  }
}
