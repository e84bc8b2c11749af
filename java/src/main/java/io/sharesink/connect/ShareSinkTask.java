package io.sharesink.connect;

import io.sharesink.connect.admin.GroupSettings;
import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.connect.sink.KeeperTimer;
import io.sharesink.connect.sink.LoaderSwap;
import io.sharesink.connect.sink.ShareSinkDriver;
import io.sharesink.connect.sink.ShareSinkDriverBuilder;
import io.sharesink.connect.sink.SinkDriverConfig;
import io.sharesink.connect.sink.StopBudget;
import io.sharesink.connect.topics.AdminTopicLister;
import io.sharesink.connect.topics.TopicPatternSubscription;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.NativeEngineSettings;
import io.sharesink.engine.NativeShareConsumerEngine;
import io.sharesink.engine.ShareConsumerEngine;
import io.sharesink.engine.kafka.KafkaShareConsumerEngine;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hosts one legacy {@link SinkTask} as a share-group member. {@code start()} joins the share group
 * through the chosen engine and starts the legacy task through the {@link ShareSinkDriver}; each
 * {@code poll()} runs one bounded share cycle (poll, convert, put, commit, acknowledge) on the
 * worker's task thread and returns {@code null}: nothing is ever produced.
 *
 * <p>Stop: the Kafka 4.x runtime calls {@code stop()} on the task thread after its poll loop has
 * ended ({@code AbstractWorkerSourceTask.close()}), so the cleanup runs there directly. Older
 * runtimes, and the {@code SourceTask} javadoc, allow a call from another thread during a poll:
 * then {@code stop()} wakes the engine, waits for the running cycle to return (it does within the
 * poll timeout) and cleans up after it, never concurrently. Cleanup stops the driver (final commit,
 * RELEASE of what is not ACCEPTed, {@code close()} and {@code stop()} of the legacy task) and
 * closes the engine, which ends the share sessions so unacknowledged records return to the group at
 * once.
 *
 * <p>PAUSE: the runtime stops calling {@code poll()}; the member stays in the group, and the
 * driver's lock keeper goes on renewing the records the task holds for up to {@code
 * share.task.stuck.timeout.ms}, then releases them to other members (or to this one after RESUME),
 * a redelivery that at-least-once allows.
 *
 * <p>Time: one {@link Time} (the {@link #time} seam, the system clock in a worker) reaches the
 * driver, the engines, the topic pattern's checks and every wait of the task; how long a stop may
 * take is {@link StopBudget}. Waits are {@link Time#waitObject}: timed monitor waits on the system
 * clock, ended on a {@code MockTime} by their condition or by a test moving the clock.
 */
public class ShareSinkTask extends SourceTask {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  /**
   * Guards the driver and engine: one cycle, or the cleanup, at a time; {@link #busy} says whether
   * one runs, and whoever ends it notifies this monitor.
   */
  private final Object gate = new Object();

  /** A cycle or the cleanup runs; guarded by {@link #gate}. */
  private boolean busy;

  private volatile boolean stopRequested;
  private volatile ShareSinkDriver driver;
  private volatile ShareConsumerEngine engine;
  private boolean cleanedUp;
  private Duration pollTimeout = Duration.ofMillis(ShareSinkConfig.POLL_TIMEOUT_MS_DEFAULT);
  private String taskName = "sharesink";

  /** How long one listing of the cluster's topics for {@code topics.regex} may take. */
  static final Duration LIST_TOPICS_TIMEOUT = Duration.ofSeconds(30);

  /** Joins the group on the given topics and starts the legacy task; set by start(). */
  private Consumer<List<String>> memberStart;

  /** {@code topics.regex}, when set; used on the task thread only. */
  private TopicPatternSubscription topicPattern;

  /** What the member subscribes to now (for {@code topics.regex}'s log lines). */
  private List<String> subscribed = List.of();

  /** The task's clock, handed to everything the task makes; a seam for tests. */
  Time time = Time.SYSTEM;

  /** What runs the driver's lock keeper off the task thread; a seam for tests. */
  KeeperTimer keeperTimer = KeeperTimer.shared();

  /** The worker's configuration (only the worker process decides it); a seam for tests. */
  Supplier<WorkerDefaults> workerDefaults = WorkerDefaults::current;

  /** A task waiting for a topic to match waits on this; stop() notifies it. */
  private final Object idle = new Object();

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void start(Map<String, String> props) {
    ShareSinkConfig config = new ShareSinkConfig(props);
    String connectorName = props.getOrDefault(ShareSinkConfig.CONNECTOR_NAME_CONFIG, "sharesink");
    int taskId = parseTaskId(props.get(ShareSinkConfig.TASK_ID_CONFIG));
    taskName = connectorName + "-" + taskId;
    pollTimeout = Duration.ofMillis(config.pollTimeoutMs());
    String groupId = config.groupId(connectorName);

    WorkerDefaults worker = WorkerDefaults.atStart(time, workerDefaults);
    StartChecks checked =
        StartChecks.run(
            config,
            props,
            connectorName,
            worker,
            BootstrapServers.HostResolver.DNS,
            StartChecks.Order.SKIP);
    Class<? extends SinkConnector> connectorClass = checked.legacyClass();
    ConnectorClients clients = checked.clients();
    ShareConsumerSettings consumerSettings = clients.consumer();
    if (!consumerSettings.ignored().isEmpty()) {
      log.warn(
          "{}: consumer settings a share consumer does not take, ignored: {}",
          taskName,
          consumerSettings.ignored());
    }
    Class<? extends SinkTask> taskClass = legacyTaskClass(connectorClass, props);
    SinkTask legacyTask = LegacyPlugins.newInstance(taskClass);

    String clientId = "connector-share-" + taskName;
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
    if (ShareSinkConfig.ENGINE_NATIVE.equals(choice.engine())) {
      String unread = unreadByNativeEngine(consumerSettings);
      if (unread != null) {
        log.warn("{}: {}", taskName, unread);
      }
    }
    SinkDriverConfig driverConfig = new SinkDriverConfig(props);
    memberStart =
        topics -> {
          ShareConsumerEngine newEngine =
              openEngine(
                  choice.engine(),
                  consumerSettings.settings(),
                  groupId,
                  clientId,
                  topics,
                  driverConfig.taskStuckTimeoutMs());
          try {
            ShareSinkDriverBuilder builder =
                new ShareSinkDriverBuilder()
                    .task(legacyTask)
                    .taskProps(legacyTaskProps(props, taskClass.getName()))
                    .driverProps(props)
                    .connectorProps(pluginProps(props, worker))
                    .connectorName(connectorName)
                    .taskId(taskId)
                    .taskName(taskName)
                    .engine(newEngine)
                    .classLoader(Thread.currentThread().getContextClassLoader())
                    .pluginMetrics(context.pluginMetrics())
                    .time(time)
                    .keeperTimer(keeperTimer);
            String dlqMode =
                props.getOrDefault(ShareSinkConfig.DLQ_RESOLVED_CONFIG, GroupSettings.CONNECT);
            if (GroupSettings.BROKER.equals(dlqMode)) {
              builder.brokerWritesDeadLetters(true);
            } else {
              builder.deadLetterClients(clients.producer(), clients.admin());
            }
            driver = builder.start();
            engine = newEngine;
          } catch (RuntimeException | Error e) {
            closeQuietly(newEngine);
            throw e;
          }
          log.info(
              "{}: legacy sink task {} runs on share group {} (engine {})",
              taskName,
              taskClass.getName(),
              groupId,
              choice.engine());
        };
    Optional<Pattern> pattern = config.topicsRegex();
    if (pattern.isEmpty()) {
      memberStart.accept(config.topics());
      return;
    }
    topicPattern =
        openTopicPattern(
            pattern.get(), config, clients.admin(), consumerSettings.settings(), worker);
    // Join at once when the cluster answers quickly; otherwise the poll loop joins later.
    followTopicPattern();
    if (driver == null && !topicPattern.resolved()) {
      topicPattern.awaitListing(pollTimeout.toMillis());
      followTopicPattern();
    }
    if (driver == null) {
      log.info(
          "{}: no topic matching topics.regex '{}' yet: the task joins share group {} when one"
              + " appears",
          taskName,
          pattern.get(),
          groupId);
    }
  }

  /**
   * The subscription for {@code topics.regex}: the pattern matched against the cluster's topics
   * every {@code metadata.max.age.ms}, never matching the worker's own topics or the DLQ topic.
   */
  TopicPatternSubscription openTopicPattern(
      Pattern pattern,
      ShareSinkConfig config,
      Map<String, Object> adminSettings,
      Map<String, Object> consumerSettings,
      WorkerDefaults worker) {
    Set<String> excluded = new HashSet<>(worker.internalTopics());
    if (!config.dlqTopic().isEmpty()) {
      excluded.add(config.dlqTopic());
    }
    long checkIntervalMs = ShareConsumerSettings.metadataMaxAgeMs(consumerSettings);
    Map<String, Object> settings = new HashMap<>(adminSettings);
    settings.put(AdminClientConfig.CLIENT_ID_CONFIG, "connector-share-topics-" + taskName);
    Admin admin = Admin.create(settings);
    return new TopicPatternSubscription(
        pattern,
        excluded,
        new AdminTopicLister(admin, LIST_TOPICS_TIMEOUT),
        time,
        checkIntervalMs,
        taskName);
  }

  /**
   * Called on the task thread with no cycle running: applies what the pattern matches now. The
   * first non-empty match joins the group; a later change replaces the member's subscription. A
   * match that becomes empty leaves the member subscribed to the names it had: they are gone from
   * the cluster, so the broker assigns nothing of them, and the broker refuses a member that
   * subscribes to nothing when it (re)joins.
   */
  private void followTopicPattern() {
    TopicPatternSubscription pattern = topicPattern;
    if (pattern == null || cleanedUp) {
      return;
    }
    Optional<SortedSet<String>> changed = pattern.poll();
    if (changed.isEmpty()) {
      return;
    }
    List<String> topics = List.copyOf(changed.get());
    if (topics.isEmpty()) {
      if (driver != null) {
        log.info(
            "{}: the share member stays subscribed to {}, which no longer exist: nothing is"
                + " assigned of them until a matching topic appears",
            taskName,
            subscribed);
      }
      return;
    }
    if (driver == null) {
      memberStart.accept(topics);
    } else {
      try {
        engine.subscribe(topics);
      } catch (EngineException e) {
        throw NativeErrors.toConnect(taskName + ": cannot change the subscription", e);
      }
      log.info("{}: share member subscribes to {} (was {})", taskName, topics, subscribed);
    }
    subscribed = topics;
  }

  /** A task waiting for its first matching topic: wait without spinning, wake on stop. */
  private void waitForTopics() {
    TopicPatternSubscription pattern = topicPattern;
    if (pattern == null) {
      return;
    }
    long waitMs = Math.min(pollTimeout.toMillis(), pattern.nextCheckMs() - time.milliseconds());
    pattern.awaitListing(pollTimeout.toMillis());
    if (waitMs > 0) {
      try {
        time.waitObject(idle, () -> stopRequested, time.milliseconds() + waitMs);
      } catch (TimeoutException e) {
        // Time to look at the cluster again.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The settings the native engine would not use, each named as the operator set it, in a sentence
   * for a WARN; null when it uses them all.
   */
  static String unreadByNativeEngine(ShareConsumerSettings consumerSettings) {
    List<String> unread =
        NativeEngineSettings.unread(consumerSettings.settings()).stream()
            // Read by the task itself: how often topics.regex is matched again.
            .filter(k -> !k.equals(ShareConsumerSettings.METADATA_MAX_AGE_MS))
            .toList();
    if (unread.isEmpty()) {
      return null;
    }
    List<String> named =
        unread.stream().map(k -> k + " (" + consumerSettings.origin(k) + ")").toList();
    return "the native engine does not use these consumer settings, so they have no effect: "
        + String.join(", ", named)
        + " (the Java client does: "
        + ShareSinkConfig.ENGINE_CONFIG
        + "="
        + ShareSinkConfig.ENGINE_JAVA
        + ")";
  }

  private static int parseTaskId(String value) {
    try {
      return value == null ? 0 : Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * One share-group member, from the engine {@code share.engine} names; a seam for tests. {@code
   * stuckTimeoutMs} is the driver's {@code share.task.stuck.timeout.ms} (see {@link
   * #nativeSettings}).
   */
  ShareConsumerEngine openEngine(
      String kind,
      Map<String, Object> clientSettings,
      String groupId,
      String clientId,
      List<String> topics,
      long stuckTimeoutMs) {
    Map<String, Object> settings = new HashMap<>(clientSettings);
    settings.put("group.id", groupId);
    settings.putIfAbsent("client.id", clientId);
    if (ShareSinkConfig.ENGINE_JAVA.equals(kind)) {
      try {
        ShareConsumerEngine java =
            new KafkaShareConsumerEngine(settings, topics, time, StopBudget.ENGINE_CLOSE);
        log.info(
            "{}: the worker's KafkaShareConsumer joins share group {} on {}",
            taskName,
            groupId,
            topics);
        return java;
      } catch (EngineException e) {
        throw NativeErrors.toConnect(taskName + ": cannot start the Java share consumer", e);
      } catch (LinkageError e) {
        throw new ConnectException(
            "share.engine=java needs a worker with Kafka 4.2+ clients (KafkaShareConsumer): " + e,
            e);
      }
    }
    String nativeVersion = NativeLoader.ensureLoaded();
    try {
      ShareConsumerEngine nativeEngine =
          new NativeShareConsumerEngine(nativeSettings(settings, stuckTimeoutMs), topics, time);
      log.info(
          "{}: sharesink native engine {} started member {} of share group {} on {}",
          taskName,
          nativeVersion,
          settings.get("client.id"),
          groupId,
          topics);
      return nativeEngine;
    } catch (EngineException e) {
      throw NativeErrors.toConnect(
          taskName + ": the native share consumer could not start for group " + groupId, e);
    }
  }

  /** The native engine's bound on holding fetched records for a caller that does not poll. */
  static final String BUFFER_HOLD_MAX_MS = "share.buffer.hold.max.ms";

  /** The native engine's close budget. */
  static final String CLOSE_TIMEOUT_MS = "share.close.timeout.ms";

  /**
   * The settings a native member starts with: the client settings, plus {@value
   * #BUFFER_HOLD_MAX_MS} = {@code share.task.stuck.timeout.ms} unless {@code
   * share.consumer.share.buffer.hold.max.ms} sets it, and {@value #CLOSE_TIMEOUT_MS} = {@link
   * StopBudget#ENGINE_CLOSE} unless {@code share.consumer.share.close.timeout.ms} sets it. The
   * engine renews the records it has fetched and the task has not polled while the task thread is
   * stuck in a call, as the driver renews the ones it holds, and both release theirs after the same
   * time: the member behaves one way.
   */
  static Map<String, Object> nativeSettings(Map<String, Object> settings, long stuckTimeoutMs) {
    Map<String, Object> out = new HashMap<>(settings);
    out.putIfAbsent(BUFFER_HOLD_MAX_MS, Long.toString(stuckTimeoutMs));
    out.putIfAbsent(CLOSE_TIMEOUT_MS, Long.toString(StopBudget.ENGINE_CLOSE.toMillis()));
    return out;
  }

  /**
   * What the legacy task is started with: the task config the legacy connector made, as the runtime
   * would pass it ({@code task.class} naming the legacy class), without our keys or the
   * connector-level keys our connector copied in.
   */
  static Map<String, String> legacyTaskProps(Map<String, String> props, String legacyTaskClass) {
    Map<String, String> legacy = LegacyConfigs.forTask(props, legacyTaskClass);
    for (String added : addedKeys(props)) {
      legacy.remove(added);
    }
    return legacy;
  }

  /**
   * Where converters and transforms are read from: the connector-level settings, with the worker
   * file's default converter (class and its prefixed settings) for each converter the connector
   * does not set, as the runtime falls back to the worker's converters.
   */
  static Map<String, String> pluginProps(Map<String, String> props, WorkerDefaults worker) {
    Map<String, String> plugin = new HashMap<>();
    props.forEach(
        (key, value) -> {
          if (!key.startsWith(ShareSinkConfig.SHARE_PREFIX)) {
            plugin.put(key, value);
          }
        });
    for (String converter : WorkerDefaults.CONVERTER_KEYS) {
      if (!plugin.containsKey(converter)) {
        plugin.putAll(worker.converter(converter));
      }
    }
    return plugin;
  }

  private static Set<String> addedKeys(Map<String, String> props) {
    String list = props.get(ShareSinkConfig.ADDED_KEYS_CONFIG);
    Set<String> keys = new HashSet<>();
    if (list != null && !list.isBlank()) {
      Arrays.stream(list.split(",")).map(String::trim).filter(s -> !s.isEmpty()).forEach(keys::add);
    }
    return keys;
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

  /**
   * One share cycle, bounded by {@code share.poll.timeout.ms} (at most 5 s, the worker's shutdown
   * grace). Native log lines are drained inside the engine's poll, on this thread, so they carry
   * the task's {@code connector.context}.
   */
  @Override
  public List<SourceRecord> poll() {
    if (stopRequested) {
      return null;
    }
    enterGate();
    try {
      if (stopRequested) {
        return null;
      }
      followTopicPattern();
      ShareSinkDriver current = driver;
      if (current == null) {
        waitForTopics();
        return null;
      }
      current.runCycle(pollTimeout);
    } catch (RetriableException e) {
      // The driver's failure is final; the runtime would re-poll a RetriableException forever.
      throw new ConnectException(e.getMessage(), e);
    } finally {
      try {
        if (stopRequested) {
          // A stop() from another thread that gave up waiting for this cycle left it to us.
          cleanUp();
        }
      } finally {
        leaveGate();
      }
    }
    return null;
  }

  /** Nothing to commit: sharesink produces no records and acknowledges in poll(). */
  @Override
  public void commit() {}

  /**
   * Stops the share member. Safe from the task thread after the poll loop (Kafka 4.x) and from
   * another thread during a poll: the cycle is woken and the cleanup waits for it.
   */
  @Override
  public void stop() {
    // A cycle returns within the poll timeout after the wakeup, unless the legacy task is stuck
    // in put(); then the cycle's own thread cleans up when it returns (see StopBudget).
    long deadlineMs =
        time.milliseconds() + pollTimeout.toMillis() + StopBudget.CYCLE_WAIT_BEYOND_POLL.toMillis();
    stopRequested = true;
    synchronized (idle) {
      idle.notifyAll();
    }
    ShareSinkDriver current = driver;
    if (current != null) {
      current.wakeup();
    }
    if (!enterGate(deadlineMs)) {
      log.warn(
          "{}: the running share cycle did not return in time; it stops the task when it does",
          taskName);
      return;
    }
    try {
      cleanUp();
    } finally {
      leaveGate();
    }
  }

  /** Waits, as long as it takes, until no cycle or cleanup runs, and starts one (a poll). */
  private void enterGate() {
    boolean interrupted = false;
    synchronized (gate) {
      while (busy) {
        try {
          gate.wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      busy = true;
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * As {@link #enterGate()}, waiting until {@code deadlineMs} on the task's clock at most (a stop);
   * returns whether it entered.
   */
  private boolean enterGate(long deadlineMs) {
    synchronized (gate) {
      try {
        time.waitObject(gate, () -> !busy, deadlineMs);
      } catch (TimeoutException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
      busy = true;
      return true;
    }
  }

  private void leaveGate() {
    synchronized (gate) {
      busy = false;
      gate.notifyAll();
    }
  }

  /** Called inside the gate; idempotent. */
  private void cleanUp() {
    if (cleanedUp) {
      return;
    }
    cleanedUp = true;
    ShareSinkDriver current = driver;
    ShareConsumerEngine currentEngine = engine;
    driver = null;
    engine = null;
    if (topicPattern != null) {
      try {
        topicPattern.close();
      } catch (RuntimeException e) {
        log.warn("{}: closing the topic lister failed", taskName, e);
      }
      topicPattern = null;
    }
    try {
      if (current != null) {
        current.stop();
      }
    } catch (RuntimeException e) {
      log.error("{}: stopping the legacy sink task failed", taskName, e);
    } finally {
      closeQuietly(currentEngine);
    }
    log.info("{}: share member stopped", taskName);
  }

  private void closeQuietly(ShareConsumerEngine toClose) {
    if (toClose == null) {
      return;
    }
    try {
      toClose.close();
    } catch (RuntimeException e) {
      log.warn("{}: closing the share consumer failed", taskName, e);
    }
  }
}
