package io.sharesink.connect.sink;

import java.util.Map;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.StringConverter;

/**
 * A converter written for these tests: Kafka's StringConverter behind a transient outage (say, a
 * schema registry down) that lasts for its first {@code failures} calls.
 */
public class FlakyConverter implements Converter {

  private final StringConverter delegate = new StringConverter();
  private int failuresLeft;
  int calls;

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    failuresLeft = Integer.parseInt(String.valueOf(configs.get("failures")));
    delegate.configure(configs, isKey);
  }

  @Override
  public byte[] fromConnectData(String topic, Schema schema, Object value) {
    return delegate.fromConnectData(topic, schema, value);
  }

  @Override
  public SchemaAndValue toConnectData(String topic, byte[] value) {
    return toConnectData(topic, null, value);
  }

  @Override
  public SchemaAndValue toConnectData(String topic, Headers headers, byte[] value) {
    calls++;
    if (failuresLeft > 0) {
      failuresLeft--;
      throw new RetriableException("registry unavailable");
    }
    return delegate.toConnectData(topic, headers, value);
  }
}
