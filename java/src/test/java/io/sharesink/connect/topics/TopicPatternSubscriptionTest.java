package io.sharesink.connect.topics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.internals.KafkaFutureImpl;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

class TopicPatternSubscriptionTest {

  private static final long INTERVAL_MS = 5_000;

  /** The cluster's topics; each listing answers with them at once unless one is queued. */
  static final class FakeLister implements TopicLister {
    final Set<String> topics = new TreeSet<>();
    final Deque<KafkaFutureImpl<Set<String>>> queued = new ArrayDeque<>();
    int listings;
    boolean closed;

    @Override
    public KafkaFuture<Set<String>> topicNames() {
      listings++;
      KafkaFutureImpl<Set<String>> next = queued.poll();
      return next != null ? next : KafkaFuture.completedFuture(Set.copyOf(topics));
    }

    @Override
    public void close() {
      closed = true;
    }
  }

  private final MockTime time = new MockTime(0, 1_000_000, 0);
  private final FakeLister cluster = new FakeLister();

  private TopicPatternSubscription subscription(String regex, Set<String> excluded) {
    return new TopicPatternSubscription(
        Pattern.compile(regex), excluded, cluster, time, INTERVAL_MS, "test-0");
  }

  private static SortedSet<String> set(String... names) {
    return new TreeSet<>(Set.of(names));
  }

  @Test
  void theFirstListingReportsWhatMatchesWholeNames() {
    cluster.topics.addAll(Set.of("orders", "orders-eu", "old-orders", "refunds"));
    TopicPatternSubscription s = subscription("orders.*", Set.of());
    assertEquals(Optional.of(set("orders", "orders-eu")), s.poll());
    assertEquals(set("orders", "orders-eu"), s.matched());
  }

  @Test
  void aNewTopicIsPickedUpAtTheNextCheckAndNotBefore() {
    cluster.topics.add("orders-1");
    long start = time.milliseconds();
    TopicPatternSubscription s = subscription("orders-.*", Set.of());
    assertEquals(Optional.of(set("orders-1")), s.poll());
    cluster.topics.add("orders-2");
    time.sleep(INTERVAL_MS - 1);
    assertEquals(Optional.empty(), s.poll());
    assertEquals(1, cluster.listings, "no listing before metadata.max.age.ms");
    time.sleep(1);
    assertEquals(Optional.of(set("orders-1", "orders-2")), s.poll());
    assertEquals(start + INTERVAL_MS * 2, s.nextCheckMs());
  }

  @Test
  void aDeletedTopicIsDroppedAndAnUnchangedSetReportsNothing() {
    cluster.topics.addAll(Set.of("orders-1", "orders-2"));
    TopicPatternSubscription s = subscription("orders-.*", Set.of());
    s.poll();
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.empty(), s.poll(), "same topics: no change");
    cluster.topics.remove("orders-1");
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.of(set("orders-2")), s.poll());
  }

  @Test
  void internalConnectAndExcludedTopicsNeverMatch() {
    cluster.topics.addAll(
        Set.of("__consumer_offsets", "__share_group_state", "connect-configs", "dlq.x", "data"));
    TopicPatternSubscription s = subscription(".*", Set.of("connect-configs", "dlq.x"));
    assertEquals(Optional.of(set("data")), s.poll());
    assertFalse(s.matches("__anything"));
    assertTrue(s.matches("anything"));
  }

  @Test
  void anEmptyMatchIsReportedOnceThenTheFirstTopicThatAppears() {
    TopicPatternSubscription s = subscription("orders-.*", Set.of());
    assertFalse(s.resolved());
    assertEquals(Optional.of(set()), s.poll());
    assertTrue(s.resolved());
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.empty(), s.poll(), "still empty: nothing new to report");
    cluster.topics.add("orders-1");
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.of(set("orders-1")), s.poll());
  }

  @Test
  void aListingInFlightIsReadWhenItCompletesWithoutBlocking() {
    KafkaFutureImpl<Set<String>> slow = new KafkaFutureImpl<>();
    cluster.queued.add(slow);
    TopicPatternSubscription s = subscription("t.*", Set.of());
    assertEquals(Optional.empty(), s.poll());
    time.sleep(INTERVAL_MS * 3);
    assertEquals(Optional.empty(), s.poll());
    assertEquals(1, cluster.listings, "one listing at a time");
    slow.complete(Set.of("t1"));
    assertEquals(Optional.of(set("t1")), s.poll());
  }

  @Test
  void aFailedListingKeepsTheTopicsAndIsRetriedAtTheNextCheck() {
    cluster.topics.add("t1");
    TopicPatternSubscription s = subscription("t.*", Set.of());
    s.poll();
    KafkaFutureImpl<Set<String>> failed = new KafkaFutureImpl<>();
    failed.completeExceptionally(new TimeoutException("listTopics timed out"));
    cluster.queued.add(failed);
    cluster.topics.add("t2");
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.empty(), s.poll());
    assertEquals(set("t1"), s.matched());
    time.sleep(INTERVAL_MS);
    assertEquals(Optional.of(set("t1", "t2")), s.poll());
  }

  @Test
  void closeClosesTheLister() {
    subscription("t", Set.of()).close();
    assertTrue(cluster.closed);
  }
}
