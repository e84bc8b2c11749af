package io.sharesink.connect;

import io.sharesink.connect.admin.GroupSettings;
import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.connect.sink.LoaderSwap;
import io.sharesink.connect.sink.ShareSinkDriver;
import io.sharesink.connect.sink.ShareSinkDriverBuilder;
import io.sharesink.connect.sink.SinkDriverConfig;
import io.sharesink.engine.ShareConsumerEngine;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a task's share-group member. What every start uses is decided once, at the task's start:
 * the legacy task (its class from the legacy connector, one instance), the engine, the clients;
 * {@link #start} then joins the group on the topics given (at the task's start, or when {@code
 * topics.regex} first matches) and starts the legacy task through a {@link ShareSinkDriver}.
 */
final class ShareMemberStarter {

  // The task's logger: these lines keep the name an operator's log configuration knows.
  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  private final Map<String, String> props;
  private final WorkerDefaults worker;
  private final ConnectorClients clients;
  private final String connectorName;
  private final int taskId;
  private final String taskName;
  private final String groupId;
  private final String clientId;
  private final Class<? extends SinkTask> taskClass;
  private final SinkTask legacyTask;
  private final String engineKind;
  private final long stuckTimeoutMs;
  private final Supplier<PluginMetrics> pluginMetrics;
  private final TaskWiring wiring;

  /**
   * Decides what the member is made of, after the task's {@link StartChecks}: loads the legacy
   * task's class and makes its instance, chooses the engine, and WARNs of the consumer settings
   * that would have no effect.
   */
  ShareMemberStarter(
      ShareSinkConfig config,
      Map<String, String> props,
      StartChecks checked,
      WorkerDefaults worker,
      String connectorName,
      int taskId,
      String taskName,
      String groupId,
      Supplier<PluginMetrics> pluginMetrics,
      TaskWiring wiring) {
    this.props = props;
    this.worker = worker;
    this.connectorName = connectorName;
    this.taskId = taskId;
    this.taskName = taskName;
    this.groupId = groupId;
    this.pluginMetrics = pluginMetrics;
    this.wiring = wiring;
    Class<? extends SinkConnector> connectorClass = checked.legacyClass();
    clients = checked.clients();
    ShareConsumerSettings consumerSettings = clients.consumer();
    if (!consumerSettings.ignored().isEmpty()) {
      log.warn(
          "{}: consumer settings a share consumer does not take, ignored: {}",
          taskName,
          consumerSettings.ignored());
    }
    taskClass = legacyTaskClass(connectorClass, props);
    legacyTask = LegacyPlugins.newInstance(taskClass);

    clientId = "connector-share-" + taskName;
    EngineChoice choice =
        EngineChoice.choose(
            config.engine(), consumerSettings.settings(), NativeLoader::loadFailure);
    if (choice.fallbackReason() != null) {
      log.warn(
          "{}: {}={}: running the Java KafkaShareConsumer engine: {}",
          taskName,
          ShareSinkConfig.ENGINE_CONFIG,
          config.engine(),
          choice.fallbackReason());
    }
    engineKind = choice.engine();
    if (ShareSinkConfig.ENGINE_NATIVE.equals(engineKind)) {
      String unread = ShareEngineOpener.unreadByNativeEngine(consumerSettings);
      if (unread != null) {
        log.warn("{}: {}", taskName, unread);
      }
    }
    stuckTimeoutMs = new SinkDriverConfig(props).taskStuckTimeoutMs();
  }

  /**
   * Joins the group on {@code topics} and starts the legacy task on the new engine; when the driver
   * cannot start, the engine is closed again and the failure thrown.
   */
  ShareMember start(List<String> topics) {
    ShareConsumerEngine engine =
        wiring
            .engines()
            .open(
                new EngineRequest(
                    engineKind,
                    clients.consumer().settings(),
                    groupId,
                    clientId,
                    topics,
                    stuckTimeoutMs,
                    taskName));
    ShareSinkDriver driver;
    try {
      ShareSinkDriverBuilder builder =
          new ShareSinkDriverBuilder()
              .task(legacyTask)
              .taskProps(LegacyConfigs.forTask(props, taskClass.getName()))
              .driverProps(props)
              .connectorProps(LegacyConfigs.forPlugins(props, worker))
              .connectorName(connectorName)
              .taskId(taskId)
              .taskName(taskName)
              .engine(engine)
              .classLoader(Thread.currentThread().getContextClassLoader())
              .pluginMetrics(pluginMetrics.get())
              .time(wiring.time())
              .keeperTimer(wiring.keeperTimer());
      String dlqMode =
          props.getOrDefault(ShareSinkConfig.DLQ_RESOLVED_CONFIG, GroupSettings.CONNECT);
      if (GroupSettings.BROKER.equals(dlqMode)) {
        builder.brokerWritesDeadLetters(true);
      } else {
        builder.deadLetterClients(clients.producer(), clients.admin());
      }
      driver = builder.start();
    } catch (RuntimeException | Error e) {
      ShareMember.closeQuietly(engine, taskName);
      throw e;
    }
    log.info(
        "{}: legacy sink task {} runs on share group {} (engine {})",
        taskName,
        taskClass.getName(),
        groupId,
        engineKind);
    return new ShareMember(driver, engine, taskName);
  }

  /**
   * The legacy task class, from {@code legacyConnector.taskClass()}: a task class is not a scanned
   * plugin, so its name cannot be resolved from our plugin directory, but the connector's class
   * reaches it inside its own.
   */
  private static Class<? extends SinkTask> legacyTaskClass(
      Class<? extends SinkConnector> connectorClass, Map<String, String> props) {
    SinkConnector connector = LegacyPlugins.newInstance(connectorClass);
    Class<? extends Task> taskClass =
        LoaderSwap.call(connectorClass.getClassLoader(), connector::taskClass);
    if (taskClass == null || !SinkTask.class.isAssignableFrom(taskClass)) {
      throw new ConnectException(
          connectorClass.getName() + ".taskClass() returned " + taskClass + ", not a SinkTask");
    }
    String expected = props.get(ShareSinkConfig.SINK_TASK_CLASS_CONFIG);
    if (expected != null && !expected.equals(taskClass.getName())) {
      log.warn(
          "{} now reports task class {}, the connector configured {}; using {}",
          connectorClass.getName(),
          taskClass.getName(),
          expected,
          taskClass.getName());
    }
    return taskClass.asSubclass(SinkTask.class);
  }
}
