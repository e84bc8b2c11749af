package io.sharesink.connect.sink;

import io.sharesink.engine.ShareConsumerEngine;
import java.lang.reflect.InvocationTargetException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wires a legacy sink task to a share group in the runtime's order: converters and transforms first
 * (a bad class name fails before the task starts), then the task context, {@code
 * task.initialize(context)} and {@code task.start(props)} under the task's class loader, then the
 * driver. A hosting task needs only this:
 *
 * <pre>{@code
 * ShareSinkDriver driver = new ShareSinkDriverBuilder()
 *     .task(legacyTask).taskProps(legacyTaskProps).driverProps(ourTaskProps)
 *     .taskName("orders-to-pg-3")
 *     .connectorName("orders-to-pg").taskId(3)
 *     .engine(engine).classLoader(ourContextLoader)
 *     .deadLetterClients(producer, admin)   // or .brokerWritesDeadLetters(true)
 *     .pluginMetrics(context.pluginMetrics())
 *     .start();
 * }</pre>
 */
public final class ShareSinkDriverBuilder {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkDriverBuilder.class);

  private SinkTask task;
  private Map<String, String> taskProps;
  private Map<String, String> driverProps;
  private Map<String, String> connectorProps;
  private String connectorName = "sharesink";
  private int taskId;
  private String taskName;
  private ShareConsumerEngine engine;
  private ClassLoader classLoader;
  private Map<String, Object> deadLetterProducerConfig;
  private Map<String, Object> deadLetterAdminConfig;
  private DeadLetterQueue deadLetterQueue;
  private boolean brokerWritesDeadLetters;
  private PluginMetrics pluginMetrics;
  private Supplier<SinkTask> newInstances;
  private Time time = Time.SYSTEM;
  private KeeperTimer keeperTimer = KeeperTimer.shared();

  /** The legacy task, instantiated (under its own loader) but not initialized or started. */
  public ShareSinkDriverBuilder task(SinkTask task) {
    this.task = task;
    return this;
  }

  /**
   * What the legacy task is started with: its connector's settings as the runtime would pass them
   * ({@code topics}, converters, {@code transforms}, {@code errors.*}, {@code share.*}).
   */
  public ShareSinkDriverBuilder taskProps(Map<String, String> taskProps) {
    this.taskProps = Map.copyOf(taskProps);
    return this;
  }

  /**
   * Settings the driver reads ({@code share.commit.*}, {@code errors.*}); defaults to the task
   * props. Pass the hosting task's own props when the legacy task's props have the {@code share.*}
   * keys stripped.
   */
  public ShareSinkDriverBuilder driverProps(Map<String, String> driverProps) {
    this.driverProps = Map.copyOf(driverProps);
    return this;
  }

  /**
   * The connector-level settings converters, transforms and predicates are read from, as the
   * runtime reads them from the connector config rather than the task config (a legacy connector
   * may return task configs without them); defaults to the task props.
   */
  public ShareSinkDriverBuilder connectorProps(Map<String, String> connectorProps) {
    this.connectorProps = Map.copyOf(connectorProps);
    return this;
  }

  public ShareSinkDriverBuilder connectorName(String connectorName) {
    this.connectorName = connectorName;
    return this;
  }

  public ShareSinkDriverBuilder taskId(int taskId) {
    this.taskId = taskId;
    return this;
  }

  /** For logs; defaults to {@code <connector>-<task id>}. */
  public ShareSinkDriverBuilder taskName(String taskName) {
    this.taskName = taskName;
    return this;
  }

  /** One subscribed share-group member; the caller closes it after {@code driver.stop()}. */
  public ShareSinkDriverBuilder engine(ShareConsumerEngine engine) {
    this.engine = engine;
    return this;
  }

  /** Resolves converter, transform and predicate class names (the hosting task's TCCL). */
  public ShareSinkDriverBuilder classLoader(ClassLoader classLoader) {
    this.classLoader = classLoader;
    return this;
  }

  /**
   * Client settings for our own DLQ producer and for the admin client that makes sure its topic
   * exists, used when a DLQ topic is configured.
   */
  public ShareSinkDriverBuilder deadLetterClients(
      Map<String, Object> producerConfig, Map<String, Object> adminConfig) {
    this.deadLetterProducerConfig = producerConfig;
    this.deadLetterAdminConfig = adminConfig;
    return this;
  }

  /** A DLQ writer of the caller's own (takes precedence over the producer config). */
  public ShareSinkDriverBuilder deadLetterQueue(DeadLetterQueue deadLetterQueue) {
    this.deadLetterQueue = deadLetterQueue;
    return this;
  }

  /**
   * The share group's own DLQ (KIP-1191, configured on the group with {@code copy.record.enable})
   * copies REJECTed records, so REJECT alone is enough: no producer.
   */
  public ShareSinkDriverBuilder brokerWritesDeadLetters(boolean brokerWritesDeadLetters) {
    this.brokerWritesDeadLetters = brokerWritesDeadLetters;
    return this;
  }

  /** Given to the task through its context, and where the driver's gauges are published. */
  public ShareSinkDriverBuilder pluginMetrics(PluginMetrics pluginMetrics) {
    this.pluginMetrics = pluginMetrics;
    return this;
  }

  /**
   * Makes the instances a restart in place starts (default: the task's class, instantiated by
   * reflection under its own class loader, as the runtime does).
   */
  public ShareSinkDriverBuilder newInstances(Supplier<SinkTask> newInstances) {
    this.newInstances = newInstances;
    return this;
  }

  /** The clock the driver times everything with (default: the system clock). */
  public ShareSinkDriverBuilder time(Time time) {
    this.time = Objects.requireNonNull(time, "time");
    return this;
  }

  /**
   * What runs the lock keeper off the task thread (default: the JVM-wide keeper thread); tests pass
   * one driven by their mock clock.
   */
  public ShareSinkDriverBuilder keeperTimer(KeeperTimer keeperTimer) {
    this.keeperTimer = Objects.requireNonNull(keeperTimer, "keeperTimer");
    return this;
  }

  /**
   * Makes a new instance of the task's class for a restart in place: initialized with the same
   * context and started with the same props, under the task's loader; stopped again when its start
   * throws, as the runtime does.
   */
  private LegacyTaskRestarts.TaskStarter restarter(
      ShareSinkTaskContext context, ClassLoader taskLoader) {
    Class<? extends SinkTask> taskClass = task.getClass();
    Map<String, String> props = taskProps;
    Supplier<SinkTask> instances = newInstances;
    return () -> {
      SinkTask fresh =
          LoaderSwap.call(
              taskLoader,
              () -> {
                if (instances != null) {
                  return instances.get();
                }
                try {
                  return taskClass.getDeclaredConstructor().newInstance();
                } catch (InvocationTargetException e) {
                  throw new ConnectException(
                      "cannot instantiate " + taskClass.getName() + ": " + e.getCause(),
                      e.getCause());
                } catch (ReflectiveOperationException e) {
                  throw new ConnectException(
                      "cannot instantiate " + taskClass.getName() + ": " + e, e);
                }
              });
      try {
        LoaderSwap.run(
            taskLoader,
            () -> {
              fresh.initialize(context);
              fresh.start(props);
            });
      } catch (RuntimeException | Error e) {
        try {
          LoaderSwap.run(taskLoader, fresh::stop);
        } catch (RuntimeException stopFailure) {
          e.addSuppressed(stopFailure);
        }
        throw e;
      }
      return fresh;
    };
  }

  /**
   * Builds the pipeline, initializes and starts the task, and returns its driver. When the task's
   * {@code start()} throws, {@code stop()} is still called on it (as the runtime does) and the
   * converters, transforms and error handling built for it are closed before the failure is
   * rethrown: an exception as a {@link ConnectException}, an {@link Error} as it is.
   */
  public ShareSinkDriver start() {
    Objects.requireNonNull(task, "task");
    Objects.requireNonNull(taskProps, "taskProps");
    Objects.requireNonNull(engine, "engine");
    ClassLoader loader =
        classLoader != null ? classLoader : Thread.currentThread().getContextClassLoader();
    String name = taskName != null ? taskName : connectorName + "-" + taskId;
    SinkDriverConfig config = new SinkDriverConfig(driverProps != null ? driverProps : taskProps);
    Map<String, String> pluginProps = connectorProps != null ? connectorProps : taskProps;

    TransformChain transforms = null;
    Converter keyConverter = null;
    Converter valueConverter = null;
    HeaderConverter headerConverter = null;
    ErrorHandling errors = null;
    try {
      keyConverter = ConnectPlugins.newConverter(pluginProps, "key.converter", loader);
      valueConverter = ConnectPlugins.newConverter(pluginProps, "value.converter", loader);
      headerConverter = ConnectPlugins.newHeaderConverter(pluginProps, loader);
      transforms = TransformChain.fromConfig(pluginProps, loader);
      DeadLetterQueue dlq = deadLetterQueue;
      if (dlq == null
          && !brokerWritesDeadLetters
          && !config.dlqTopic().isEmpty()
          && deadLetterProducerConfig != null) {
        dlq =
            KafkaDeadLetterQueue.create(
                deadLetterProducerConfig,
                deadLetterAdminConfig,
                config.dlqTopic(),
                config.dlqTopicReplicationFactor(),
                config.dlqContextHeaders(),
                connectorName,
                taskId);
      }
      errors = new ErrorHandling(config, name, dlq, brokerWritesDeadLetters, time);
    } catch (RuntimeException | Error e) {
      // An Error too: a plugin missing a class fails with NoClassDefFoundError, and what was
      // built before it (a dead-letter producer among them) must not outlive the attempt.
      if (transforms != null) {
        transforms.close();
      }
      RecordPipeline.closeQuietly(keyConverter);
      RecordPipeline.closeQuietly(valueConverter);
      RecordPipeline.closeQuietly(headerConverter);
      if (errors != null) {
        errors.close();
      }
      throw e;
    }

    RecordPipeline pipeline =
        new RecordPipeline(
            keyConverter,
            valueConverter,
            headerConverter,
            transforms,
            errors,
            config.deliveryCountHeader());
    Supplier<Map<String, String>> configs = () -> taskProps;
    ShareSinkTaskContext context =
        new ShareSinkTaskContext(configs, config, errors, pluginMetrics, name);
    ClassLoader taskLoader = LoaderSwap.loaderOf(task);
    try {
      LoaderSwap.run(
          taskLoader,
          () -> {
            task.initialize(context);
            task.start(taskProps);
          });
    } catch (RuntimeException | Error e) {
      // The runtime stops a task whose start threw, whatever it threw; then nothing built for it
      // (converters, transforms, a dead-letter producer) may outlive it.
      try {
        LoaderSwap.run(taskLoader, task::stop);
      } catch (RuntimeException stopFailure) {
        e.addSuppressed(stopFailure);
      }
      pipeline.close();
      errors.close();
      if (e instanceof Error error) {
        throw error;
      }
      throw new ConnectException(name + ": the legacy task failed to start", e);
    }
    ShareSinkDriver driver =
        new ShareSinkDriver(
            new DriverParts(
                task,
                context,
                engine,
                pipeline,
                config,
                errors,
                new LegacyTaskRestarts(config, restarter(context, taskLoader)),
                name,
                time,
                keeperTimer));
    if (pluginMetrics != null) {
      try {
        driver.metrics().registerWith(pluginMetrics, new LinkedHashMap<>());
        EngineGauges.register(engine, pluginMetrics, new LinkedHashMap<>());
        driver.metrics().publishSinkTaskMetrics(connectorName, taskId);
      } catch (RuntimeException e) {
        log.warn("{}: could not register metrics", name, e);
      }
    }
    return driver;
  }
}
