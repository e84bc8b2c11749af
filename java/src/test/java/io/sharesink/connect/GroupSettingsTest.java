package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.admin.ClusterFacts;
import io.sharesink.connect.admin.GroupSettings;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class GroupSettingsTest {

  private static ClusterFacts cluster(int shareVersion, Map<String, String> group) {
    return cluster(
        shareVersion, group, Optional.of(Map.of("errors.deadletterqueue.group.enable", "true")));
  }

  private static ClusterFacts cluster(
      int shareVersion, Map<String, String> group, Optional<Map<String, String>> dlqTopic) {
    return new ClusterFacts(
        OptionalInt.of(shareVersion),
        Map.of(
            "errors.deadletterqueue.topic.name.prefix", "dlq.",
            "group.share.min.record.lock.duration.ms", "15000",
            "group.share.max.record.lock.duration.ms", "60000",
            "group.share.record.lock.duration.ms", "30000",
            "group.share.min.delivery.count.limit", "2",
            "group.share.max.delivery.count.limit", "10"),
        group,
        dlqTopic);
  }

  private static GroupSettings settings(
      Integer lock, Integer delivery, String mode, String topic, long commitMs) {
    return new GroupSettings("earliest", lock, delivery, mode, topic, commitMs);
  }

  @Test
  void aClusterWithoutShareGroupsIsRefusedWithTheCommandThatEnablesThem() {
    GroupSettings plain = settings(null, null, "auto", "", 5000);
    Map<String, List<String>> problems = plain.problems(cluster(0, Map.of()));
    assertEquals(
        List.of(
            "the cluster has share.version 0: share groups are off (a cluster upgraded to Kafka"
                + " 4.2+ keeps them off until the feature is enabled): enable them with"
                + " kafka-features.sh --bootstrap-server <broker> upgrade --feature"
                + " share.version=1"),
        problems.get("share.group.id"),
        problems.toString());
    assertFalse(plain.problems(cluster(1, Map.of())).containsKey("share.group.id"));
    assertFalse(plain.problems(null).containsKey("share.group.id"), "cluster not reached");
  }

  @Test
  void moreTasksThanTheGroupMayHoldMembersIsAnErrorOnTasksMax() {
    GroupSettings plain = settings(null, null, "auto", "", 5000);
    assertFalse(plain.withMembers(200).problems(cluster(1, Map.of())).containsKey("tasks.max"));
    String m = plain.withMembers(201).problems(cluster(1, Map.of())).get("tasks.max").get(0);
    assertTrue(m.startsWith("tasks.max=201 runs a share consumer per task"), m);
    assertTrue(m.contains("at most 200 members (group.share.max.size"), m);
    // The broker's own bound, when it reports one.
    ClusterFacts small =
        new ClusterFacts(OptionalInt.of(1), Map.of("group.share.max.size", "8"), Map.of());
    assertTrue(plain.withMembers(9).problems(small).containsKey("tasks.max"));
    assertFalse(plain.withMembers(8).problems(small).containsKey("tasks.max"));
    // Without the cluster, against Kafka's default, saying so.
    String offline = plain.withMembers(300).problems(null).get("tasks.max").get(0);
    assertTrue(offline.contains("Kafka's defaults, the cluster could not be reached"), offline);
    assertFalse(plain.problems(null).containsKey("tasks.max"), "not checked without a count");
  }

  @Test
  void setsTheOffsetResetAlwaysAndTheRestWhenGiven() {
    GroupSettings plain = settings(null, null, "auto", "", 5000);
    assertEquals(
        Map.of("share.auto.offset.reset", "earliest"),
        plain.groupConfigs(plain.resolveDlqMode(cluster(2, Map.of())), cluster(2, Map.of())));
    GroupSettings all = settings(45_000, 7, "auto", "dlq.orders", 5000);
    ClusterFacts facts = cluster(2, Map.of());
    assertEquals("broker", all.resolveDlqMode(facts));
    assertEquals(
        Map.of(
            "share.auto.offset.reset", "earliest",
            "share.record.lock.duration.ms", "45000",
            "share.delivery.count.limit", "7",
            "errors.deadletterqueue.topic.name", "dlq.orders",
            "errors.deadletterqueue.copy.record.enable", "true"),
        all.groupConfigs("broker", facts));
  }

  @Test
  void theIsolationLevelAskedForIsSetAndOneNobodyAsksForIsRemoved() {
    GroupSettings plain = settings(null, null, "connect", "", 5000);
    ClusterFacts atDefault = cluster(2, Map.of("share.isolation.level", "read_uncommitted"));
    ClusterFacts committed = cluster(2, Map.of("share.isolation.level", "read_committed"));
    // Nobody asks: Kafka's default stays, and a read_committed goes (the classic consumer's
    // default is read_uncommitted).
    assertFalse(plain.groupConfigs("connect", atDefault).containsKey("share.isolation.level"));
    Map<String, String> removed = plain.groupConfigs("connect", committed);
    assertTrue(removed.containsKey("share.isolation.level"));
    assertEquals(null, removed.get("share.isolation.level"), "null deletes the group config");
    assertFalse(plain.readCommitted());

    GroupSettings asked =
        plain.withIsolation(
            new GroupSettings.Isolation("read_committed", "consumer.override.isolation.level"));
    assertTrue(asked.readCommitted());
    assertEquals(
        "read_committed", asked.groupConfigs("connect", atDefault).get("share.isolation.level"));
    assertEquals(
        "read_committed", asked.groupConfigs("connect", committed).get("share.isolation.level"));
    assertEquals(
        "read_committed", asked.groupConfigs("connect", null).get("share.isolation.level"));
    GroupSettings uncommitted =
        plain.withIsolation(
            new GroupSettings.Isolation("read_uncommitted", "share.consumer.isolation.level"));
    assertFalse(uncommitted.readCommitted());
    assertEquals(
        "read_uncommitted",
        uncommitted.groupConfigs("connect", committed).get("share.isolation.level"));
    assertTrue(asked.problems(atDefault).isEmpty());
  }

  @Test
  void aLevelTheInvisibleWorkerMayAskForLeavesTheGroupsAsItIs() {
    GroupSettings unknown =
        settings(null, null, "connect", "", 5000).withIsolation(GroupSettings.Isolation.UNKNOWN);
    ClusterFacts committed = cluster(2, Map.of("share.isolation.level", "read_committed"));
    Map<String, String> configs = unknown.groupConfigs("connect", committed);
    assertFalse(
        configs.containsKey("share.isolation.level"),
        "a read_committed the worker may ask for is not removed: " + configs);
    assertTrue(unknown.problems(committed).isEmpty());
    assertTrue(GroupSettings.readsCommitted(configs, committed), "the lag follows the group's");
    assertFalse(
        GroupSettings.readsCommitted(
            Map.of(), cluster(2, Map.of("share.isolation.level", "read_uncommitted"))));
    Map<String, String> removed = new HashMap<>();
    removed.put("share.isolation.level", null);
    assertFalse(GroupSettings.readsCommitted(removed, committed), "removed: Kafka's default");
  }

  @Test
  void anIsolationLevelKafkaDoesNotKnowIsAnErrorOnTheKeyThatSetIt() {
    GroupSettings plain = settings(null, null, "connect", "", 5000);
    Map<String, List<String>> problems =
        plain
            .withIsolation(
                new GroupSettings.Isolation("READ_COMMITTED", "share.consumer.isolation.level"))
            .problems(null);
    assertEquals(
        List.of(
            "'READ_COMMITTED' is not an isolation level: use read_committed (records of"
                + " committed transactions only) or read_uncommitted (every record, as Kafka's"
                + " default)"),
        problems.get("share.consumer.isolation.level"),
        problems.toString());
    Map<String, List<String>> fromWorker =
        plain
            .withIsolation(new GroupSettings.Isolation("yes", "worker consumer.isolation.level"))
            .problems(cluster(2, Map.of()));
    assertTrue(
        fromWorker
            .get("consumer.override.isolation.level")
            .get(0)
            .startsWith("the worker's consumer.isolation.level 'yes' is not an isolation level"),
        fromWorker.toString());
  }

  @Test
  void autoFallsBackToConnectWithoutShareVersion2OrThePrefix() {
    assertEquals(
        "connect",
        settings(null, null, "auto", "dlq.x", 5000).resolveDlqMode(cluster(1, Map.of())));
    assertEquals(
        "connect",
        settings(null, null, "auto", "orders-dlq", 5000).resolveDlqMode(cluster(2, Map.of())));
    assertEquals("connect", settings(null, null, "auto", "dlq.x", 5000).resolveDlqMode(null));
    assertEquals("broker", settings(null, null, "broker", "x", 5000).resolveDlqMode(null));
  }

  @Test
  void connectModeRemovesABrokerDlqLeftOnTheGroup() {
    ClusterFacts facts = cluster(2, Map.of("errors.deadletterqueue.topic.name", "dlq.old"));
    GroupSettings s = settings(null, null, "connect", "orders-dlq", 5000);
    Map<String, String> expected = new HashMap<>();
    expected.put("share.auto.offset.reset", "earliest");
    expected.put("errors.deadletterqueue.topic.name", null);
    expected.put("errors.deadletterqueue.copy.record.enable", null);
    assertEquals(expected, s.groupConfigs("connect", facts));
  }

  @Test
  void checksBoundsAndNamesKeyAndBound() {
    Map<String, List<String>> p =
        settings(90_000, 20, "auto", "", 5000).problems(cluster(2, Map.of()));
    assertTrue(
        p.get("share.record.lock.duration.ms").get(0).contains("[15000, 60000]"), p::toString);
    assertTrue(p.get("share.delivery.count.limit").get(0).contains("[2, 10]"), p::toString);
  }

  @Test
  void setsTheRecordLockWindowWithinTheBrokersBounds() {
    Map<String, String> broker =
        Map.of(
            "group.share.min.partition.max.record.locks", "100",
            "group.share.max.partition.max.record.locks", "4000",
            "group.share.partition.max.record.locks", "2000");
    ClusterFacts facts = new ClusterFacts(OptionalInt.of(2), broker, Map.of());
    GroupSettings ok = new GroupSettings("earliest", null, null, "connect", "", 5000, 4000);
    assertTrue(ok.problems(facts).isEmpty(), () -> ok.problems(facts).toString());
    assertEquals("4000", ok.groupConfigs("connect", facts).get("share.partition.max.record.locks"));
    assertEquals(4000, ok.effectiveRecordLocks(facts));

    GroupSettings tooMany = new GroupSettings("earliest", null, null, "connect", "", 5000, 5000);
    String problem = tooMany.problems(facts).get("share.partition.max.record.locks").get(0);
    assertTrue(problem.contains("[100, 4000]"), problem);
    assertTrue(problem.contains("group.share.max.partition.max.record.locks"), problem);
    // Unreachable cluster: Kafka's default bounds.
    assertTrue(tooMany.problems(null).containsKey("share.partition.max.record.locks"));

    // Unreachable cluster: nothing set, Kafka's default window.
    GroupSettings unset = settings(null, null, "connect", "", 5000);
    assertEquals(null, unset.groupConfigs("connect", null).get("share.partition.max.record.locks"));
    assertEquals(2000, unset.effectiveRecordLocks(null));
  }

  @Test
  void unsetRaisesTheBrokersDefaultWindowToItsMaximum() {
    Map<String, String> broker =
        Map.of(
            "group.share.max.partition.max.record.locks", "4000",
            "group.share.partition.max.record.locks", "2000");
    GroupSettings unset = settings(null, null, "connect", "", 5000);
    // A new group (no value reported) and a group at the broker's default: raised to the maximum.
    for (Map<String, String> group :
        List.of(Map.<String, String>of(), Map.of("share.partition.max.record.locks", "2000"))) {
      ClusterFacts facts = new ClusterFacts(OptionalInt.of(2), broker, group);
      assertEquals(
          "4000", unset.groupConfigs("connect", facts).get("share.partition.max.record.locks"));
      assertEquals(4000, unset.effectiveRecordLocks(facts));
      assertTrue(unset.problems(facts).isEmpty(), () -> unset.problems(facts).toString());
    }
    // A window someone set on the group is kept.
    ClusterFacts own =
        new ClusterFacts(
            OptionalInt.of(2), broker, Map.of("share.partition.max.record.locks", "3000"));
    assertFalse(unset.groupConfigs("connect", own).containsKey("share.partition.max.record.locks"));
    assertEquals(3000, unset.effectiveRecordLocks(own));
    // A broker that reports no maximum (Kafka 4.2: no such group config) is left alone.
    ClusterFacts old =
        new ClusterFacts(
            OptionalInt.of(1), Map.of("group.share.partition.max.record.locks", "2000"), Map.of());
    assertFalse(unset.groupConfigs("connect", old).containsKey("share.partition.max.record.locks"));
    assertEquals(2000, unset.effectiveRecordLocks(old));
    // A broker whose default already is its maximum: nothing to raise.
    ClusterFacts atMax =
        new ClusterFacts(
            OptionalInt.of(2),
            Map.of(
                "group.share.max.partition.max.record.locks", "4000",
                "group.share.partition.max.record.locks", "4000"),
            Map.of());
    assertFalse(
        unset.groupConfigs("connect", atMax).containsKey("share.partition.max.record.locks"));
    assertEquals(4000, unset.effectiveRecordLocks(atMax));
  }

  @Test
  void commitIntervalMustBeWellBelowTheEffectiveLock() {
    // explicit lock
    assertTrue(
        settings(20_000, null, "auto", "", 15_000)
            .problems(null)
            .containsKey("share.commit.interval.ms"));
    // the group's effective value
    ClusterFacts facts = cluster(2, Map.of("share.record.lock.duration.ms", "16000"));
    String m =
        settings(null, null, "auto", "", 10_000)
            .problems(facts)
            .get("share.commit.interval.ms")
            .get(0);
    assertTrue(m.contains("16000"), m);
    // unknown lock (cluster unreachable): no guess
    assertEquals(Map.of(), settings(null, null, "auto", "", 25_000).problems(null));
    assertEquals(Map.of(), settings(null, null, "auto", "", 5_000).problems(cluster(2, Map.of())));
  }

  @Test
  void brokerModeNeedsShareVersion2AndThePrefix() {
    Map<String, List<String>> p =
        settings(null, null, "broker", "orders-dlq", 5000).problems(cluster(1, Map.of()));
    assertTrue(p.get("share.dlq.mode").get(0).contains("share.version"), p::toString);
    assertTrue(p.get("errors.deadletterqueue.topic.name").get(0).contains("'dlq.'"), p::toString);
    assertEquals(
        Map.of(),
        settings(null, null, "broker", "dlq.orders", 5000).problems(cluster(2, Map.of())));
  }

  @Test
  void theBrokerWritesOnlyToADlqTopicThatAcceptsShareGroupDeadLetters() {
    GroupSettings auto = settings(null, null, "auto", "dlq.orders", 5000);
    GroupSettings broker = settings(null, null, "broker", "dlq.orders", 5000);
    ClusterFacts missing = cluster(2, Map.of(), Optional.empty());
    ClusterFacts notEnabled = cluster(2, Map.of(), Optional.of(Map.of()));
    assertEquals("connect", auto.resolveDlqMode(missing));
    assertEquals("connect", auto.resolveDlqMode(notEnabled));
    String m = broker.problems(missing).get("errors.deadletterqueue.topic.name").get(0);
    assertTrue(m.contains("does not exist"), m);
    m = broker.problems(notEnabled).get("errors.deadletterqueue.topic.name").get(0);
    assertTrue(m.contains("errors.deadletterqueue.group.enable=true"), m);
  }
}
