package io.sharesink.connect;

import io.sharesink.connect.topics.AdminTopicLister;
import io.sharesink.connect.topics.TopicPatternSubscription;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A task on {@code topics.regex}: applies what its {@link TopicPatternSubscription} matches to the
 * task's member (the first match joins the group, a later one changes the subscription), and lets a
 * task that has no member yet wait for the next check without spinning.
 */
final class TopicPatternFollower {

  // The task's logger: these lines keep the name an operator's log configuration knows.
  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  /** How long one listing of the cluster's topics for {@code topics.regex} may take. */
  static final Duration LIST_TOPICS_TIMEOUT = Duration.ofSeconds(30);

  private final TopicPatternSubscription subscription;
  private final Time time;
  private final String taskName;

  /** What the member subscribes to now (for the log lines); used on the task thread only. */
  private List<String> subscribed = List.of();

  /** A task waiting for a topic to match waits on this; {@link #wakeUp} notifies it. */
  private final Object idle = new Object();

  TopicPatternFollower(TopicPatternSubscription subscription, Time time, String taskName) {
    this.subscription = subscription;
    this.time = time;
    this.taskName = taskName;
  }

  /**
   * The subscription for {@code topics.regex}: the pattern matched against the cluster's topics
   * every {@code metadata.max.age.ms}, never matching the worker's own topics or the DLQ topic.
   */
  static TopicPatternSubscription subscription(
      Pattern pattern,
      ShareSinkConfig config,
      ConnectorClients clients,
      WorkerDefaults worker,
      Time time,
      String taskName) {
    Set<String> excluded = new HashSet<>(worker.internalTopics());
    if (!config.dlqTopic().isEmpty()) {
      excluded.add(config.dlqTopic());
    }
    long checkIntervalMs = ShareConsumerSettings.metadataMaxAgeMs(clients.consumer().settings());
    Admin admin = Admin.create(listingSettings(clients.consumer().settings(), taskName));
    return new TopicPatternSubscription(
        pattern,
        excluded,
        new AdminTopicLister(admin, LIST_TOPICS_TIMEOUT),
        time,
        checkIntervalMs,
        taskName);
  }

  /**
   * The settings of the admin client that lists the topics for the pattern: the share consumer's
   * own servers and credentials (the keys an admin client knows of them), so the pattern matches
   * exactly the topics the consumer's principal may describe, as a classic consumer's pattern
   * subscription does. Never the connector's admin principal: it may see topics the consumer cannot
   * read, whose names the task would then subscribe to (the broker refuses the whole subscription)
   * and log.
   */
  static Map<String, Object> listingSettings(Map<String, Object> consumer, String taskName) {
    Map<String, Object> settings = new HashMap<>();
    consumer.forEach(
        (key, value) -> {
          if (AdminClientConfig.configNames().contains(key)) {
            settings.put(key, value);
          }
        });
    settings.put(AdminClientConfig.CLIENT_ID_CONFIG, "connector-share-topics-" + taskName);
    return settings;
  }

  /**
   * Called on the task thread with no cycle running: applies what the pattern matches now to {@code
   * member}, and returns the member afterwards. The first non-empty match joins the group through
   * {@code starter}; a later change replaces the member's subscription. A match that becomes empty
   * leaves the member subscribed to the names it had: they are gone from the cluster, so the broker
   * assigns nothing of them, and the broker refuses a member that subscribes to nothing when it
   * (re)joins.
   */
  ShareMember follow(ShareMember member, ShareMemberStarter starter) {
    Optional<SortedSet<String>> changed = subscription.poll();
    if (changed.isEmpty()) {
      return member;
    }
    List<String> topics = List.copyOf(changed.get());
    if (topics.isEmpty()) {
      if (member != null) {
        log.info(
            "{}: the share member stays subscribed to {}, which no longer exist: nothing is"
                + " assigned of them until a matching topic appears",
            taskName,
            subscribed);
      }
      return member;
    }
    ShareMember following = member;
    if (following == null) {
      following = starter.start(topics);
    } else {
      following.subscribe(topics);
      log.info("{}: share member subscribes to {} (was {})", taskName, topics, subscribed);
    }
    subscribed = topics;
    return following;
  }

  /** Whether a listing of the cluster's topics has completed since the task started. */
  boolean resolved() {
    return subscription.resolved();
  }

  /** Waits up to {@code maxMs} on the task's clock for a running listing to complete. */
  void awaitListing(long maxMs) {
    subscription.awaitListing(maxMs);
  }

  /**
   * A task waiting for its first matching topic: waits, at most {@code maxMs}, until the next check
   * is due, without spinning; {@link #wakeUp} ends the wait once {@code stopRequested} holds.
   */
  void awaitNextCheck(long maxMs, Supplier<Boolean> stopRequested) {
    long waitMs = Math.min(maxMs, subscription.nextCheckMs() - time.milliseconds());
    subscription.awaitListing(maxMs);
    if (waitMs > 0) {
      try {
        time.waitObject(idle, stopRequested, time.milliseconds() + waitMs);
      } catch (TimeoutException e) {
        // Time to look at the cluster again.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Ends a wait in {@link #awaitNextCheck} whose stop condition now holds; from any thread. */
  void wakeUp() {
    synchronized (idle) {
      idle.notifyAll();
    }
  }

  /** Closes the topic lister, logging rather than throwing a failure. */
  void close() {
    try {
      subscription.close();
    } catch (RuntimeException e) {
      log.warn("{}: closing the topic lister failed", taskName, e);
    }
  }
}
