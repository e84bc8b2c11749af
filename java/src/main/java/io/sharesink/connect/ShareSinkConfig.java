package io.sharesink.connect;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * The configuration of a {@link ShareSinkConnector}. Keys starting with {@value #SHARE_PREFIX}
 * belong to sharesink; every other key is handed to the legacy sink connector and its tasks.
 */
public class ShareSinkConfig extends AbstractConfig {

  /** Prefix of the keys sharesink owns; they are never passed to the legacy sink. */
  public static final String SHARE_PREFIX = "share.";

  public static final String SINK_CONNECTOR_CLASS_CONFIG = "share.sink.connector.class";
  private static final String SINK_CONNECTOR_CLASS_DOC =
      "Class (or alias) of the unmodified sink connector to run on a share group, e.g."
          + " org.apache.kafka.connect.file.FileStreamSinkConnector. It may live in its own"
          + " plugin.path directory; it is loaded through the worker's plugin class loaders.";
  private static final String SINK_CONNECTOR_CLASS_DISPLAY = "Legacy sink connector class";

  public static final String TOPICS_CONFIG = "topics";
  private static final String TOPICS_DOC =
      "Topics the share group consumes. Also passed to the legacy connector and its tasks as"
          + " their 'topics'.";
  private static final String TOPICS_DISPLAY = "Topics";

  public static final String BOOTSTRAP_SERVERS_CONFIG = "share.consumer.bootstrap.servers";
  private static final String BOOTSTRAP_SERVERS_DOC =
      "host:port pairs of the Kafka cluster holding the share group, comma separated.";
  private static final String BOOTSTRAP_SERVERS_DISPLAY = "Share consumer bootstrap servers";

  public static final String PROBE_TIMEOUT_MS_CONFIG = "share.probe.timeout.ms";
  private static final String PROBE_TIMEOUT_MS_DOC =
      "How long a task waits at start for the cluster to answer the native engine's probe.";
  private static final String PROBE_TIMEOUT_MS_DISPLAY = "Probe timeout (ms)";
  private static final long PROBE_TIMEOUT_MS_DEFAULT = 15_000L;

  /**
   * Set by the connector in every task config: the legacy task class, as the legacy connector
   * reported it. Not a user setting.
   */
  public static final String SINK_TASK_CLASS_CONFIG = "share.sink.task.class";

  private static final String GROUP_LEGACY_SINK = "Legacy sink";
  private static final String GROUP_SHARE_CONSUMER = "Share consumer";

  public static final ConfigDef CONFIG_DEF = configDef();

  public ShareSinkConfig(Map<String, String> props) {
    super(CONFIG_DEF, props);
  }

  private static ConfigDef configDef() {
    int legacyOrder = 0;
    int consumerOrder = 0;
    return new ConfigDef()
        .define(
            SINK_CONNECTOR_CLASS_CONFIG,
            Type.STRING,
            ConfigDef.NO_DEFAULT_VALUE,
            new SinkConnectorClassValidator(),
            Importance.HIGH,
            SINK_CONNECTOR_CLASS_DOC,
            GROUP_LEGACY_SINK,
            ++legacyOrder,
            Width.LONG,
            SINK_CONNECTOR_CLASS_DISPLAY)
        .define(
            TOPICS_CONFIG,
            Type.LIST,
            ConfigDef.NO_DEFAULT_VALUE,
            new NonEmptyListValidator(),
            Importance.HIGH,
            TOPICS_DOC,
            GROUP_SHARE_CONSUMER,
            ++consumerOrder,
            Width.LONG,
            TOPICS_DISPLAY)
        .define(
            BOOTSTRAP_SERVERS_CONFIG,
            Type.STRING,
            ConfigDef.NO_DEFAULT_VALUE,
            new ConfigDef.NonEmptyString(),
            Importance.HIGH,
            BOOTSTRAP_SERVERS_DOC,
            GROUP_SHARE_CONSUMER,
            ++consumerOrder,
            Width.LONG,
            BOOTSTRAP_SERVERS_DISPLAY)
        .define(
            PROBE_TIMEOUT_MS_CONFIG,
            Type.LONG,
            PROBE_TIMEOUT_MS_DEFAULT,
            ConfigDef.Range.between(100L, 600_000L),
            Importance.LOW,
            PROBE_TIMEOUT_MS_DOC,
            GROUP_SHARE_CONSUMER,
            ++consumerOrder,
            Width.SHORT,
            PROBE_TIMEOUT_MS_DISPLAY);
  }

  public String sinkConnectorClass() {
    return getString(SINK_CONNECTOR_CLASS_CONFIG).trim();
  }

  public List<String> topics() {
    return getList(TOPICS_CONFIG);
  }

  public String bootstrapServers() {
    return getString(BOOTSTRAP_SERVERS_CONFIG).trim();
  }

  public long probeTimeoutMs() {
    return getLong(PROBE_TIMEOUT_MS_CONFIG);
  }

  /**
   * Checks that the named class loads through the thread's context class loader (the worker's
   * plugin loaders) and is a {@link SinkConnector}.
   */
  static final class SinkConnectorClassValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value == null) {
        return; // "missing required configuration" is reported by ConfigDef itself
      }
      LegacyPlugins.loadSinkConnectorClass(name, ((String) value).trim());
    }

    @Override
    public String toString() {
      return "a SinkConnector class installed on the worker";
    }
  }

  static final class NonEmptyListValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value instanceof List<?> list
          && !list.isEmpty()
          && list.stream().allMatch(v -> v != null && !v.toString().isBlank())) {
        return;
      }
      if (value != null) {
        throw new ConfigException(name, value, "must be a non-empty list of names");
      }
    }

    @Override
    public String toString() {
      return "non-empty list";
    }
  }

  /** Prints the configuration reference (reStructuredText) for the documentation. */
  public static void main(String[] args) {
    System.out.println(CONFIG_DEF.toEnrichedRst());
  }
}
