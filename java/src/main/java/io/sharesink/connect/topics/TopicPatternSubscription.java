package io.sharesink.connect.topics;

import java.util.Collections;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.regex.Pattern;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code topics.regex} for a member that can only subscribe by name: which of the cluster's topics
 * the pattern matches now, re-checked every {@code metadata.max.age.ms} as Kafka's consumer
 * refreshes the metadata its pattern subscription is matched against.
 *
 * <p>Called from the task's poll loop, it never blocks: {@link #poll} starts a listing when one is
 * due and reports its outcome on a later call once it has completed. A topic is matched as Kafka's
 * consumer matches it ({@code pattern.matcher(name).matches()}); names starting with {@code __}
 * (the broker's internal topics and others named like them) and the names in {@code excluded}
 * (Connect's own config, offset and status topics, the DLQ topic) never match. A failed listing
 * keeps the topics as they were and is retried at the next check.
 */
public final class TopicPatternSubscription {

  private static final Logger log = LoggerFactory.getLogger(TopicPatternSubscription.class);

  /** Prefix of the broker's internal topics; Kafka reserves it. */
  static final String INTERNAL_PREFIX = "__";

  private final Pattern pattern;
  private final Set<String> excluded;
  private final TopicLister lister;
  private final Time time;
  private final long checkIntervalMs;
  private final String context;

  private long nextCheckMs;
  private KafkaFuture<Set<String>> listing;

  /** What the last completed listing matched; null until one completes. */
  private SortedSet<String> matched;

  private boolean warnedEmpty;

  public TopicPatternSubscription(
      Pattern pattern,
      Set<String> excluded,
      TopicLister lister,
      Time time,
      long checkIntervalMs,
      String context) {
    this.pattern = pattern;
    this.excluded = Set.copyOf(excluded);
    this.lister = lister;
    this.time = time;
    this.checkIntervalMs = Math.max(1, checkIntervalMs);
    this.context = context;
    this.nextCheckMs = time.milliseconds();
  }

  /** Whether {@code topic} is one the pattern subscribes to, whatever the cluster holds. */
  public boolean matches(String topic) {
    return !topic.startsWith(INTERNAL_PREFIX)
        && !excluded.contains(topic)
        && pattern.matcher(topic).matches();
  }

  /**
   * Starts a listing when a check is due; returns the matching topics when a completed listing
   * found a set different from the last one reported (the first completed listing always reports,
   * even an empty set), else empty.
   */
  public Optional<SortedSet<String>> poll() {
    long now = time.milliseconds();
    if (listing == null && now >= nextCheckMs) {
      listing = lister.topicNames();
      nextCheckMs = now + checkIntervalMs;
    }
    if (listing == null || !listing.isDone()) {
      return Optional.empty();
    }
    KafkaFuture<Set<String>> done = listing;
    listing = null;
    Set<String> names;
    try {
      names = done.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    } catch (ExecutionException e) {
      log.warn(
          "{}: could not list the cluster's topics for topics.regex '{}' ({}); subscribed to {}"
              + " until the next check in {} ms",
          context,
          pattern,
          e.getCause() == null ? e : e.getCause().toString(),
          matched == null ? "nothing yet" : matched,
          checkIntervalMs);
      return Optional.empty();
    }
    return changed(match(names));
  }

  private SortedSet<String> match(Set<String> names) {
    SortedSet<String> out = new TreeSet<>();
    for (String name : names) {
      if (matches(name)) {
        out.add(name);
      }
    }
    return Collections.unmodifiableSortedSet(out);
  }

  private Optional<SortedSet<String>> changed(SortedSet<String> now) {
    if (now.equals(matched)) {
      return Optional.empty();
    }
    SortedSet<String> before = matched;
    matched = now;
    if (now.isEmpty()) {
      if (!warnedEmpty) {
        warnedEmpty = true;
        log.warn(
            "{}: topics.regex '{}' matches no topic{}; checking again every {} ms"
                + " (metadata.max.age.ms)",
            context,
            pattern,
            before == null ? "" : " any more (was " + before + ")",
            checkIntervalMs);
      }
    } else {
      warnedEmpty = false;
      if (before == null) {
        log.info("{}: topics.regex '{}' matches {}", context, pattern, now);
      } else {
        SortedSet<String> added = new TreeSet<>(now);
        added.removeAll(before);
        SortedSet<String> removed = new TreeSet<>(before);
        removed.removeAll(now);
        log.info(
            "{}: topics.regex '{}' now matches {} (new: {}, gone: {})",
            context,
            pattern,
            now,
            added,
            removed);
      }
    }
    return Optional.of(now);
  }

  /** The topics the last completed listing matched; empty until one completed. */
  public SortedSet<String> matched() {
    return matched == null ? Collections.emptySortedSet() : matched;
  }

  /** Whether a listing has completed since this started. */
  public boolean resolved() {
    return matched != null;
  }

  /** When {@link #poll} has something to do next: now while a listing runs, else the next check. */
  public long nextCheckMs() {
    return listing != null ? time.milliseconds() : nextCheckMs;
  }

  /**
   * Waits up to {@code maxMs} on the clock for a running listing to complete; for a task with no
   * member. The listing completes on the admin client's thread, which notifies the wait ({@link
   * Time#waitObject}); on a {@code MockTime} the wait ends when it completes or the clock moves
   * past the deadline.
   */
  public void awaitListing(long maxMs) {
    KafkaFuture<Set<String>> running = listing;
    if (running == null) {
      return;
    }
    Object completed = new Object();
    running.whenComplete(
        (names, error) -> {
          synchronized (completed) {
            completed.notifyAll();
          }
        });
    try {
      time.waitObject(completed, running::isDone, time.milliseconds() + maxMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (TimeoutException e) {
      // The outcome is read (and logged) by the next poll.
    }
  }

  public void close() {
    lister.close();
  }
}
