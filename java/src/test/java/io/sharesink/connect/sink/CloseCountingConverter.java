package io.sharesink.connect.sink;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.StringConverter;

/**
 * A converter written for these tests: Kafka's StringConverter that counts how often any instance
 * of it was closed, so a test can tell whether what was built for a task outlived it.
 */
public class CloseCountingConverter implements Converter, AutoCloseable {

  static final AtomicInteger CLOSED = new AtomicInteger();

  private final StringConverter delegate = new StringConverter();

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    delegate.configure(configs, isKey);
  }

  @Override
  public byte[] fromConnectData(String topic, Schema schema, Object value) {
    return delegate.fromConnectData(topic, schema, value);
  }

  @Override
  public SchemaAndValue toConnectData(String topic, byte[] value) {
    return delegate.toConnectData(topic, value);
  }

  @Override
  public void close() {
    CLOSED.incrementAndGet();
  }
}
