package io.sharesink.connect;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Says, in the log, that a connector's topic does not exist: a share group subscribes by name, so
 * its members join, the tasks run and nothing arrives, with no other sign. The broker assigns the
 * topic's partitions once it is created; this only tells the operator, and keeps looking until
 * every topic exists: a WARN per topic when first found missing and again every {@link #rewarnMs}
 * while it stays missing, one INFO when it appears.
 *
 * <p>Time comes from the given clock; {@link #checkIfDue()} decides whether a lookup is due, so the
 * caller may call it as often as it likes.
 */
final class MissingTopics {

  private static final Logger log = LoggerFactory.getLogger(MissingTopics.class);

  /** How often a missing topic is looked up again. */
  static final long RECHECK_MS = 15_000;

  /** How often a topic still missing is warned about again. */
  static final long REWARN_MS = 10 * 60_000;

  /** The cluster lookup: the topics of the given ones that do not exist. */
  @FunctionalInterface
  interface Lookup {
    List<String> missing(Collection<String> topics);
  }

  /** What one lookup found: topics warned about (again), and topics that appeared. */
  record Check(List<String> warned, List<String> appeared) {
    static final Check NONE = new Check(List.of(), List.of());
  }

  private final String connector;
  private final Lookup lookup;
  private final Time time;
  private final long recheckMs;
  private final long rewarnMs;

  /** Still missing as last seen; all of the connector's topics until the first lookup. */
  private final Set<String> missing;

  private long nextCheckMs;
  private long nextWarnMs;
  private boolean warned;

  MissingTopics(
      String connector,
      Collection<String> topics,
      Lookup lookup,
      Time time,
      long recheckMs,
      long rewarnMs) {
    this.connector = connector;
    this.missing = new LinkedHashSet<>(topics);
    this.lookup = lookup;
    this.time = time;
    this.recheckMs = recheckMs;
    this.rewarnMs = rewarnMs;
    this.nextCheckMs = time.milliseconds();
  }

  MissingTopics(String connector, Collection<String> topics, Lookup lookup, Time time) {
    this(connector, topics, lookup, time, RECHECK_MS, REWARN_MS);
  }

  /** True while some topic is missing, or has not been looked up yet. */
  synchronized boolean watching() {
    return !missing.isEmpty();
  }

  /** The topics missing as last seen. */
  synchronized List<String> missing() {
    return List.copyOf(missing);
  }

  /**
   * Looks the missing topics up when a lookup is due, and logs what changed. A lookup that fails
   * (the cluster does not answer) changes nothing and is tried again after the usual interval.
   */
  synchronized Check checkIfDue() {
    long now = time.milliseconds();
    if (missing.isEmpty() || now < nextCheckMs) {
      return Check.NONE;
    }
    nextCheckMs = now + recheckMs;
    List<String> stillMissing;
    try {
      stillMissing = lookup.missing(List.copyOf(missing));
    } catch (RuntimeException e) {
      log.debug("Connector {}: could not check that topics {} exist: {}", connector, missing, e);
      return Check.NONE;
    }
    List<String> appeared = new ArrayList<>();
    for (String topic : missing) {
      if (!stillMissing.contains(topic)) {
        appeared.add(topic);
      }
    }
    missing.removeAll(appeared);
    if (warned) {
      // Topics that existed at the first lookup were never reported missing: nothing to say.
      appeared.forEach(
          topic ->
              log.info(
                  "Connector {}: topic {} exists now; the share group gets its partitions",
                  connector,
                  topic));
    } else {
      appeared.clear();
    }
    List<String> warnedNow = List.of();
    if (!missing.isEmpty() && (!warned || now >= nextWarnMs)) {
      warnedNow = List.copyOf(missing);
      for (String topic : warnedNow) {
        log.warn(
            "Connector {}: topic {} {}does not exist; the connector's tasks run but receive"
                + " nothing from it until it is created (checking every {} s)",
            connector,
            topic,
            warned ? "still " : "",
            recheckMs / 1000);
      }
      warned = true;
      nextWarnMs = now + rewarnMs;
    }
    return new Check(warnedNow, List.copyOf(appeared));
  }

  /** The WARN validation logs for topics it found missing (validation passes: see the docs). */
  static void warnAtValidation(String connector, List<String> topics) {
    for (String topic : topics) {
      log.warn(
          "Validating connector {}: topic {} does not exist; a share group does not create it, so"
              + " its tasks will receive nothing from it until it is created",
          connector == null ? "(unnamed)" : connector,
          topic);
    }
  }
}
