package io.sharesink.connect.sink;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.connect.errors.ConnectException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the dead letter queue topic when it does not exist, as Connect's {@code
 * DeadLetterQueueReporter} does when a classic sink task starts: one partition, {@code
 * errors.deadletterqueue.topic.replication.factor} replicas. Used where sharesink's own producer
 * writes the DLQ ({@code share.dlq.mode} {@code connect}); without it the topic exists only where
 * the broker creates topics on first use.
 */
final class DeadLetterTopic {

  private static final Logger log = LoggerFactory.getLogger(DeadLetterTopic.class);

  /** The partitions Connect gives a DLQ topic it creates. */
  static final int PARTITIONS = 1;

  private DeadLetterTopic() {}

  /**
   * Makes sure {@code topic} exists, creating it with {@code replicationFactor} replicas (-1: the
   * broker's default) if it does not. A principal that may not list or create topics gets a WARN
   * and the topic as it is (the producer may still write to one created by someone else); any other
   * failure is a {@link ConnectException} naming the replication factor's key.
   */
  static void ensure(Admin admin, String topic, short replicationFactor, Duration timeout) {
    int timeoutMs = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
    try {
      Set<String> names =
          admin
              .listTopics(new ListTopicsOptions().timeoutMs(timeoutMs))
              .names()
              .get(timeoutMs, TimeUnit.MILLISECONDS);
      if (names.contains(topic)) {
        return;
      }
      Optional<Short> replicas =
          replicationFactor < 0 ? Optional.empty() : Optional.of(replicationFactor);
      admin
          .createTopics(
              List.of(new NewTopic(topic, Optional.of(PARTITIONS), replicas)),
              new CreateTopicsOptions().timeoutMs(timeoutMs))
          .all()
          .get(timeoutMs, TimeUnit.MILLISECONDS);
      log.info(
          "Created the dead letter queue topic {} ({} partition, replication factor {})",
          topic,
          PARTITIONS,
          replicas.map(String::valueOf).orElse("of the broker's default"));
    } catch (ExecutionException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      if (cause instanceof TopicExistsException) {
        return;
      }
      if (cause instanceof TopicAuthorizationException
          || cause instanceof ClusterAuthorizationException) {
        log.warn(
            "Cannot check or create the dead letter queue topic {} ({}); failed records reach it"
                + " only if it exists",
            topic,
            cause.getMessage());
        return;
      }
      throw failure(topic, replicationFactor, cause.getMessage(), cause);
    } catch (TimeoutException e) {
      throw failure(topic, replicationFactor, "no answer within " + timeout.toMillis() + " ms", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failure(topic, replicationFactor, "interrupted", e);
    }
  }

  private static ConnectException failure(
      String topic, short replicationFactor, String why, Throwable cause) {
    return new ConnectException(
        "Could not create the dead letter queue topic '"
            + topic
            + "' with "
            + SinkDriverConfig.DLQ_TOPIC_REPLICATION_FACTOR_CONFIG
            + "="
            + replicationFactor
            + ": "
            + why,
        cause);
  }
}
