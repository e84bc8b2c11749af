package io.sharesink.connect.topics;

import java.util.Set;
import org.apache.kafka.common.KafkaFuture;

/** Lists the names of the cluster's topics, without blocking the caller. */
public interface TopicLister extends AutoCloseable {

  /** The names of the cluster's (non-internal) topics, or the failure of asking. */
  KafkaFuture<Set<String>> topicNames();

  @Override
  void close();
}
