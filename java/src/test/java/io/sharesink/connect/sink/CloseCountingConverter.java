package io.sharesink.connect.sink;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.connect.storage.StringConverter;

/**
 * A converter written for these tests: Kafka's StringConverter that counts how often any instance
 * of it was closed, so a test can tell whether what was built for a task outlived it.
 */
public class CloseCountingConverter extends StringConverter {

  static final AtomicInteger CLOSED = new AtomicInteger();

  @Override
  public void close() {
    CLOSED.incrementAndGet();
    super.close();
  }
}
