package io.sharesink.connect.topics;

import java.time.Duration;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.common.KafkaFuture;

/**
 * A {@link TopicLister} over an admin client. Topics the broker marks internal ({@code
 * __consumer_offsets}, {@code __share_group_state}, ...) are left out, as Kafka's consumer leaves
 * them out of a pattern subscription ({@code exclude.internal.topics=true}).
 */
public final class AdminTopicLister implements TopicLister {

  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(1);

  private final Admin admin;
  private final int timeoutMs;

  public AdminTopicLister(Admin admin, Duration timeout) {
    this.admin = admin;
    this.timeoutMs = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
  }

  @Override
  public KafkaFuture<Set<String>> topicNames() {
    return admin
        .listTopics(new ListTopicsOptions().listInternal(false).timeoutMs(timeoutMs))
        .names();
  }

  @Override
  public void close() {
    admin.close(CLOSE_TIMEOUT);
  }
}
