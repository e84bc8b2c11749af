package io.sharesink.connect;

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.engine.NativeEngine;
import io.sharesink.engine.NativeException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hosts one legacy {@link SinkTask}. Walking skeleton: {@code start()} proves the native engine
 * reaches the cluster and starts the legacy task; {@code poll()} idles. The share cycle (fetch,
 * convert, put, preCommit, acknowledge) comes later.
 */
public class ShareSinkTask extends SourceTask {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  /** Well under the worker's 5 s graceful shutdown, so a stop is never held up by poll(). */
  private static final long IDLE_POLL_MS = 1_000L;

  private final CountDownLatch stopRequested = new CountDownLatch(1);
  private final AtomicBoolean legacyStopped = new AtomicBoolean();
  private SinkTask legacyTask;
  private ClassLoader legacyLoader;

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void start(Map<String, String> props) {
    ShareSinkConfig config = new ShareSinkConfig(props);
    String nativeVersion = NativeLoader.ensureLoaded();
    String bootstrap = config.bootstrapServers();
    String report;
    try {
      report = NativeEngine.probe(bootstrap, config.probeTimeoutMs());
    } catch (NativeException e) {
      throw NativeErrors.toConnect("sharesink native engine could not probe " + bootstrap, e);
    }
    log.info("sharesink native engine {} answered: {}", nativeVersion, report);

    Class<? extends SinkConnector> connectorClass =
        LegacyPlugins.loadSinkConnectorClass(
            ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, config.sinkConnectorClass());
    Class<? extends SinkTask> taskClass = legacyTaskClass(connectorClass, props);
    legacyLoader = taskClass.getClassLoader();
    legacyTask = LegacyPlugins.newInstance(taskClass);
    Map<String, String> legacyProps = LegacyConfigs.forTask(props, taskClass.getName());
    ContextClassLoader.run(
        legacyLoader,
        () -> {
          legacyTask.initialize(new LegacySinkTaskContext(context, legacyProps));
          legacyTask.start(legacyProps);
        });
    log.info("Started legacy sink task {} in share mode", taskClass.getName());
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
        ContextClassLoader.call(connectorClass.getClassLoader(), connector::taskClass);
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

  @Override
  public List<SourceRecord> poll() {
    try {
      stopRequested.await(IDLE_POLL_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return null;
  }

  /** May be called from another thread than poll(); stops the legacy task once. */
  @Override
  public void stop() {
    stopRequested.countDown();
    if (legacyTask != null && legacyStopped.compareAndSet(false, true)) {
      ContextClassLoader.run(legacyLoader, legacyTask::stop);
    }
  }
}
