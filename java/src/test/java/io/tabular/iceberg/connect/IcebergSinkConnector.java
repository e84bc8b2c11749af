package io.tabular.iceberg.connect;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A stand-in under the name of Tabular's Iceberg sink (not on the test class path), so that the
 * ordering tests can load a class of the table of known sinks and subclass it.
 */
public class IcebergSinkConnector extends SinkConnector {
  @Override
  public String version() {
    return "stand-in";
  }

  @Override
  public void start(Map<String, String> props) {}

  @Override
  public Class<? extends Task> taskClass() {
    return null;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    return List.of();
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return new ConfigDef();
  }
}
