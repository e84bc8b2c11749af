package io.sharesink.connect;

import io.sharesink.connect.nativelib.NativeLoadException;
import io.sharesink.connect.nativelib.NativeLoader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an unmodified sink connector on a KIP-932 share group. It is a source connector on purpose:
 * its task's {@code poll()} drives the legacy {@code SinkTask} on the Connect task thread (see
 * DESIGN.md, "Hosting decision"). Keys starting with {@code share.} are ours; all others are handed
 * to the legacy connector as if the runtime had started it.
 */
public class ShareSinkConnector extends SourceConnector {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkConnector.class);

  private Map<String, String> props;
  private SinkConnector legacyConnector;
  private ClassLoader legacyLoader;

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public ConfigDef config() {
    return ShareSinkConfig.CONFIG_DEF;
  }

  /**
   * Validates our keys and, since nothing can run without it, that the native library loads; a load
   * failure is reported on {@value ShareSinkConfig#SINK_CONNECTOR_CLASS_CONFIG}, the key that turns
   * on share mode, so the REST validate endpoint shows it.
   */
  @Override
  public Config validate(Map<String, String> connectorConfigs) {
    Config config = super.validate(connectorConfigs);
    Optional<NativeLoadException> nativeFailure = NativeLoader.loadFailure();
    if (nativeFailure.isPresent()) {
      String message =
          "sharesink cannot run any sink in share mode on this worker: "
              + nativeFailure.get().getMessage();
      configValue(config, ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).addErrorMessage(message);
    }
    return config;
  }

  private static ConfigValue configValue(Config config, String name) {
    for (ConfigValue value : config.configValues()) {
      if (value.name().equals(name)) {
        return value;
      }
    }
    ConfigValue added = new ConfigValue(name);
    config.configValues().add(added);
    return added;
  }

  @Override
  public void start(Map<String, String> props) {
    this.props = Collections.unmodifiableMap(new HashMap<>(props));
    ShareSinkConfig config = new ShareSinkConfig(this.props);
    NativeLoader.ensureLoaded();

    Class<? extends SinkConnector> legacyClass =
        LegacyPlugins.loadSinkConnectorClass(
            ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, config.sinkConnectorClass());
    legacyLoader = legacyClass.getClassLoader();
    legacyConnector = LegacyPlugins.newInstance(legacyClass);
    Map<String, String> legacyProps = LegacyConfigs.forConnector(this.props, legacyClass.getName());
    ContextClassLoader.run(
        legacyLoader,
        () -> {
          legacyConnector.initialize(new LegacySinkConnectorContext(context()));
          legacyConnector.start(legacyProps);
        });
    log.info(
        "Started legacy sink connector {} (version {}) in share mode on topics {}",
        legacyClass.getName(),
        legacyVersion(),
        config.topics());
  }

  // Only for the log line: a legacy connector whose version() breaks (e.g. a plugin built for
  // another Kafka release calling a moved internal class) can still run.
  private String legacyVersion() {
    try {
      return ContextClassLoader.call(legacyLoader, legacyConnector::version);
    } catch (RuntimeException | LinkageError e) {
      log.warn("{}.version() failed: {}", legacyConnector.getClass().getName(), e.toString());
      return "unknown";
    }
  }

  @Override
  public Class<? extends Task> taskClass() {
    return ShareSinkTask.class;
  }

  /**
   * The legacy connector's task configs, each with our keys and the legacy task class added; the
   * runtime then adds {@code task.class} (ours) and {@code topics}.
   */
  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> legacyConfigs =
        ContextClassLoader.call(legacyLoader, () -> legacyConnector.taskConfigs(maxTasks));
    Class<? extends Task> legacyTaskClass =
        ContextClassLoader.call(legacyLoader, legacyConnector::taskClass);
    Map<String, String> shareKeys = LegacyConfigs.shareKeys(props);
    List<Map<String, String>> configs = new ArrayList<>(legacyConfigs.size());
    for (Map<String, String> legacyConfig : legacyConfigs) {
      Map<String, String> taskConfig = new HashMap<>(legacyConfig);
      taskConfig.putAll(shareKeys);
      taskConfig.put(ShareSinkConfig.SINK_TASK_CLASS_CONFIG, legacyTaskClass.getName());
      configs.add(taskConfig);
    }
    return configs;
  }

  @Override
  public void stop() {
    if (legacyConnector != null) {
      ContextClassLoader.run(legacyLoader, legacyConnector::stop);
      legacyConnector = null;
    }
  }
}
