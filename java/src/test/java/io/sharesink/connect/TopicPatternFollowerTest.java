package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.topics.TopicLister;
import io.sharesink.connect.topics.TopicPatternSubscription;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

/**
 * The task's {@code topics.regex} follower without a member (joining and resubscribing a member run
 * in {@code ShareSinkTaskLifecycleTest}): on a {@link MockTime}, nothing here sleeps.
 */
class TopicPatternFollowerTest {

  private static final long CHECK_MS = 5_000;

  private final MockTime time = new MockTime(0, 1_000_000L, 0);
  private final Set<String> clusterTopics = new java.util.concurrent.ConcurrentSkipListSet<>();
  private boolean listerFailsToClose;

  private final TopicLister lister =
      new TopicLister() {
        @Override
        public KafkaFuture<Set<String>> topicNames() {
          return KafkaFuture.completedFuture(Set.copyOf(clusterTopics));
        }

        @Override
        public void close() {
          if (listerFailsToClose) {
            throw new IllegalStateException("admin client already closed");
          }
        }
      };

  private final TopicPatternFollower follower =
      new TopicPatternFollower(
          new TopicPatternSubscription(
              Pattern.compile("orders.*"), Set.of(), lister, time, CHECK_MS, "files-0"),
          time,
          "files-0");

  @Test
  void aMatchOfNothingStartsNoMember() {
    clusterTopics.add("refunds");
    // No starter: the follower must not need one when nothing matches.
    assertNull(follower.follow(null, null));
    assertTrue(follower.resolved(), "the first listing completed");
    assertNull(follower.follow(null, null), "no check due, no change");
  }

  @Test
  void aTaskWithoutAMemberWaitsUntilTheNextCheckOnTheTasksClock() throws Exception {
    assertNull(follower.follow(null, null));
    BlockingCall<Boolean> idle =
        BlockingCall.start(() -> follower.awaitNextCheck(60_000, () -> false));
    idle.awaitBlocked();
    time.sleep(CHECK_MS);
    assertTrue(idle.result(), "the next check is due");
  }

  @Test
  void aStopEndsTheWaitAtOnce() throws Exception {
    assertNull(follower.follow(null, null));
    AtomicBoolean stopRequested = new AtomicBoolean();
    BlockingCall<Boolean> idle =
        BlockingCall.start(() -> follower.awaitNextCheck(60_000, stopRequested::get));
    idle.awaitBlocked();
    stopRequested.set(true);
    follower.wakeUp();
    assertTrue(idle.result(), "woken without the clock moving");
  }

  @Test
  void aWaitForADueCheckReturnsAtOnce() {
    assertFalse(follower.resolved(), "nothing listed yet: a check is due now");
    follower.awaitNextCheck(60_000, () -> false);
  }

  @Test
  void closingAFailingListerLogsRatherThanThrows() {
    listerFailsToClose = true;
    assertDoesNotThrow(follower::close);
  }

  @Test
  void topicsAreListedAsTheShareConsumerNotAsTheAdminClient() {
    // The consumer's identity (servers, credentials) lists the topics: a classic consumer's
    // pattern sees what its principal may describe, and the admin principal may see more.
    Map<String, Object> consumer =
        Map.of(
            "bootstrap.servers", "broker:9093",
            "security.protocol", "SASL_SSL",
            "sasl.mechanism", "SCRAM-SHA-512",
            "sasl.jaas.config", "ScramLoginModule required username=\"tenant-a\";",
            "ssl.truststore.location", "/etc/trust.p12",
            "group.id", "tenant-a-group",
            "isolation.level", "read_committed",
            "client.id", "connector-consumer-c-0");
    Map<String, Object> listing = TopicPatternFollower.listingSettings(consumer, "c-0");
    assertEquals(
        Map.of(
            "bootstrap.servers", "broker:9093",
            "security.protocol", "SASL_SSL",
            "sasl.mechanism", "SCRAM-SHA-512",
            "sasl.jaas.config", "ScramLoginModule required username=\"tenant-a\";",
            "ssl.truststore.location", "/etc/trust.p12",
            "client.id", "connector-share-topics-c-0"),
        listing);
  }
}
