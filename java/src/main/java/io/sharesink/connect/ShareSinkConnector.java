package io.sharesink.connect;

import io.sharesink.connect.admin.ClusterFacts;
import io.sharesink.connect.admin.GroupSettings;
import io.sharesink.connect.admin.ShareGroupAdmin;
import io.sharesink.connect.admin.ShareGroupSetup;
import io.sharesink.connect.autoscale.Autoscaler;
import io.sharesink.connect.autoscale.TaskAutoscale;
import io.sharesink.connect.nativelib.NativeLoadException;
import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.connect.ordering.ShareOrdering;
import io.sharesink.connect.sink.LoaderSwap;
import io.sharesink.connect.sink.SinkDriverConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.kafka.common.config.Config;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest.ClientType;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs an unmodified sink connector on a KIP-932 share group. It is a source connector on purpose:
 * its task's {@code poll()} drives the legacy {@code SinkTask} on the Connect task thread (see
 * docs/architecture.md, "Decisions, and why"). Keys starting with {@code share.} are ours; all
 * others are handed to the legacy connector as if the runtime had started it.
 *
 * <p>{@code start()} also prepares the share group, once per connector start and before any task
 * joins: group configs (start position, lock duration, delivery limit, broker DLQ) and, on the
 * group's first start, start offsets from the classic runtime's consumer group.
 */
public class ShareSinkConnector extends SourceConnector {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkConnector.class);

  /** Admin calls at connector start: generous, a slow cluster should not fail the connector. */
  static final Duration START_ADMIN_TIMEOUT = Duration.ofSeconds(60);

  /** Admin calls during validation: short, the REST validate call waits for them. */
  static final Duration VALIDATE_ADMIN_TIMEOUT = Duration.ofSeconds(5);

  /**
   * Connector-level settings the runtime reads from the connector config, not the task config:
   * copied into task configs that lack them so the tasks' converters, transforms and error handling
   * match what the sink runtime would have built.
   */
  static final List<String> CONNECTOR_LEVEL_PREFIXES =
      List.of(
          "key.converter",
          "value.converter",
          "header.converter",
          "transforms",
          "predicates",
          "errors.",
          // The clients' settings: the tasks build the share consumer, the DLQ producer and the
          // topic lister's admin client from them, as the runtime builds a sink task's clients
          // from the connector's config (and asks the worker's policy about them again).
          ShareConsumerSettings.CONNECTOR_OVERRIDE_PREFIX,
          ConnectorClients.PRODUCER_OVERRIDE_PREFIX,
          ConnectorClients.ADMIN_OVERRIDE_PREFIX);

  private Map<String, String> props;
  private SinkConnector legacyConnector;
  private ClassLoader legacyLoader;
  private String dlqMode = GroupSettings.CONNECT;

  /** share.commit.max.records derived from the group's window, or null when set explicitly. */
  private Integer derivedCommitMaxRecords;

  private ShareGroupLag lag;

  /** The task autoscaler (io.sharesink.connect.autoscale), null unless share.tasks.autoscale. */
  private Autoscaler autoscaler;

  private TopicWatchThread topicWatch;

  /** Looks up the bootstrap hosts in validate() and start(). */
  private final BootstrapServers.HostResolver resolver;

  /** The worker's configuration (only the worker process decides it); a seam for tests. */
  Supplier<WorkerDefaults> workerDefaults = WorkerDefaults::current;

  public ShareSinkConnector() {
    this(BootstrapServers.HostResolver.DNS);
  }

  /** A connector whose bootstrap host lookups go to {@code resolver}; for tests. */
  ShareSinkConnector(BootstrapServers.HostResolver resolver) {
    this.resolver = resolver;
  }

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public ConfigDef config() {
    return ShareSinkConfig.CONFIG_DEF;
  }

  /**
   * Our keys' results merged with the legacy connector's own {@code validate()} on its settings,
   * plus checks no single key can make: the native library loads (reported on {@value
   * ShareSinkConfig#SINK_CONNECTOR_CLASS_CONFIG}, the key that turns on share mode), the worker's
   * override policy allows every client setting the connector adds (each refusal on its key; while
   * any is refused nothing connects anywhere), the files those settings name are regular and
   * bounded and a PEM key store one Kafka's client takes ({@link ClientFiles}), bootstrap servers
   * are known, well-formed and resolvable, and the group settings fit the cluster's bounds (when
   * the cluster answers within a few seconds).
   */
  @Override
  public Config validate(Map<String, String> connectorConfigs) {
    Config config = super.validate(connectorConfigs);
    Map<String, ConfigValue> values = new LinkedHashMap<>();
    config.configValues().forEach(v -> values.put(v.name(), v));

    String engine =
        connectorConfigs
            .getOrDefault(ShareSinkConfig.ENGINE_CONFIG, ShareSinkConfig.ENGINE_AUTO)
            .trim();
    // Only a forced native engine needs the library; 'auto' falls back to the Java client.
    if (ShareSinkConfig.ENGINE_NATIVE.equalsIgnoreCase(engine)) {
      Optional<NativeLoadException> nativeFailure = NativeLoader.loadFailure();
      nativeFailure.ifPresent(
          e ->
              value(values, ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG)
                  .addErrorMessage(
                      "sharesink cannot run any sink in share mode on this worker: "
                          + e.getMessage()
                          + " (or set "
                          + ShareSinkConfig.ENGINE_CONFIG
                          + "="
                          + ShareSinkConfig.ENGINE_JAVA
                          + ")"));
    }

    // Settings the runtime would act on only because it takes a share-mode connector for a source
    // connector (an offsets topic it creates and reads whole): a sink has none of them.
    SourceOnlyKeys.problems(connectorConfigs)
        .forEach((key, message) -> value(values, key).addErrorMessage(message));

    // Exactly one of topics and topics.regex, as the sink runtime requires; a malformed pattern
    // is already reported on topics.regex by its ConfigDef validator.
    if (!hasErrors(values)) {
      ConfigValidators.topicChoiceProblems(connectorConfigs)
          .forEach((key, message) -> value(values, key).addErrorMessage(message));
    }
    boolean configErrors = hasErrors(values);

    // The worker's policy on every client setting the connector adds, before anything connects:
    // a refused override is never used, not even to look up a host.
    String name = connectorConfigs.get("name");
    Class<? extends Connector> policyClass = legacyClassOrOurs(connectorConfigs);
    ConnectorClients clients = ConnectorClients.of(workerDefaults.get(), connectorConfigs);
    Set<ClientType> askedByRuntime = clients.askedByTheRuntime();
    Map<String, List<String>> refused =
        clients.refusals(name, policyClass, EnumSet.complementOf(EnumSet.copyOf(askedByRuntime)));
    refused.forEach(
        (key, messages) -> messages.forEach(m -> value(values, key).addErrorMessage(m)));
    boolean anyRefused =
        !refused.isEmpty() || !clients.refusals(name, policyClass, askedByRuntime).isEmpty();

    // Files the allowed settings name: regular and bounded, before any client would read them
    // (the admin client of the cluster checks below reads its own).
    boolean badFiles = false;
    if (!anyRefused) {
      Map<String, String> fileProblems = ClientFiles.problems(clients);
      fileProblems.forEach((key, message) -> value(values, key).addErrorMessage(message));
      badFiles = !fileProblems.isEmpty();
    }

    if (!configErrors) {
      ShareSinkConfig parsed = new ShareSinkConfig(connectorConfigs);
      validateLegacy(parsed, connectorConfigs, values);
      if (!anyRefused && !badFiles) {
        validateCluster(parsed, name, values, clients, resolver);
      }
    }

    // ---- order (io.sharesink.connect.ordering): a known order-sensitive or self-committing sink
    // is an error on the key that makes it so, unless share.ordering chose explicitly.
    ShareOrdering.problems(
            connectorConfigs,
            className ->
                LegacyPlugins.loadSinkConnectorClass(
                    ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, className))
        .forEach((key, messages) -> messages.forEach(m -> value(values, key).addErrorMessage(m)));
    // ---- autoscale (io.sharesink.connect.autoscale): its minimum within tasks.max
    TaskAutoscale.problems(connectorConfigs)
        .forEach((key, messages) -> messages.forEach(m -> value(values, key).addErrorMessage(m)));
    return new Config(new ArrayList<>(values.values()));
  }

  /** The legacy sink's class for the policy to see, or ours while it cannot be loaded. */
  private static Class<? extends Connector> legacyClassOrOurs(Map<String, String> props) {
    String name = props.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    if (name == null || name.isBlank()) {
      return ShareSinkConnector.class;
    }
    try {
      return LegacyPlugins.loadSinkConnectorClass(
          ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, name.trim());
    } catch (ConfigException e) {
      return ShareSinkConnector.class; // reported on share.sink.connector.class already
    }
  }

  private static boolean hasErrors(Map<String, ConfigValue> values) {
    return values.values().stream().anyMatch(v -> !v.errorMessages().isEmpty());
  }

  /** Runs the legacy connector's validate() on its settings and merges its results into ours. */
  private static void validateLegacy(
      ShareSinkConfig parsed, Map<String, String> props, Map<String, ConfigValue> values) {
    Class<? extends SinkConnector> legacyClass =
        LegacyPlugins.loadSinkConnectorClass(
            ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, parsed.sinkConnectorClass());
    Map<String, String> legacyProps = LegacyConfigs.forConnector(props, legacyClass.getName());
    Config legacyResult;
    try {
      SinkConnector legacy = LegacyPlugins.newInstance(legacyClass);
      legacyResult =
          LoaderSwap.call(legacyClass.getClassLoader(), () -> legacy.validate(legacyProps));
    } catch (RuntimeException | LinkageError e) {
      value(values, ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG)
          .addErrorMessage(legacyClass.getName() + ".validate() failed: " + e);
      return;
    }
    if (legacyResult == null) {
      return;
    }
    for (ConfigValue legacyValue : legacyResult.configValues()) {
      ConfigValue ours = values.get(legacyValue.name());
      if (ours == null) {
        values.put(legacyValue.name(), mutableCopy(legacyValue));
      } else {
        legacyValue.errorMessages().stream()
            .filter(m -> !ours.errorMessages().contains(m))
            .forEach(ours::addErrorMessage);
      }
    }
  }

  /**
   * Where the clients connect, then the group settings against the cluster's bounds, read with the
   * connector's admin settings. An unreachable cluster is not an error here (the worker may see it
   * later); the checks that need it then use Kafka's defaults. Validation connects only to the
   * worker's own servers: Connect's validation of a sink connector ({@code
   * AbstractHerder.validateConnectorConfig}) connects to no Kafka cluster at all, so servers a
   * caller chose ({@code admin.override.bootstrap.servers}) are only looked up in DNS here, and the
   * settings are checked against Kafka's defaults, and against the cluster at the connector's
   * start.
   */
  private static void validateCluster(
      ShareSinkConfig parsed,
      String connectorName,
      Map<String, ConfigValue> values,
      ConnectorClients clients,
      BootstrapServers.HostResolver resolver) {
    Map<String, String> problems = clients.connectionProblems(resolver);
    if (!problems.isEmpty()) {
      problems.forEach((key, message) -> value(values, key).addErrorMessage(message));
      return;
    }
    String groupId = null;
    if (connectorName != null && !connectorName.isBlank()) {
      groupId = parsed.groupId(connectorName);
    } else if (parsed.getString(ShareSinkConfig.GROUP_ID_CONFIG) != null) {
      groupId = parsed.groupId(null);
    }
    Map<String, Object> adminSettings = clients.admin();
    ClusterFacts facts = null;
    Optional<String> chosenBy = clients.adminServersChosenBy();
    if (chosenBy.isPresent()) {
      log.info(
          "Validation does not connect to the servers {} names (Connect's own validation connects"
              + " to no cluster); the share group settings are checked against Kafka's defaults"
              + " here, and against the cluster when the connector starts",
          chosenBy.get());
      groupSettings(parsed, clients)
          .problems(null)
          .forEach((key, messages) -> messages.forEach(m -> value(values, key).addErrorMessage(m)));
      return;
    }
    try (ShareGroupAdmin admin =
        ShareGroupAdmin.create(adminSettings, "sharesink-validate", VALIDATE_ADMIN_TIMEOUT)) {
      RuntimeException factsFailure = null;
      try {
        facts = admin.facts(groupId, parsed.dlqTopic());
      } catch (RuntimeException e) {
        factsFailure = e;
      }
      // A cluster that answered (even refusing the group configs) can say which topics exist;
      // one that timed out would only make the REST call wait again.
      if (factsFailure == null || !timedOut(factsFailure)) {
        warnAboutMissingTopics(admin, parsed, connectorName);
      }
      if (factsFailure != null) {
        throw factsFailure;
      }
    } catch (RuntimeException e) {
      Throwable auth = authenticationFailure(e);
      if (auth != null) {
        // The cluster answered and refused the admin client: a configuration error, not an
        // outage. Said on the admin's key, whether the connector or the worker set it.
        String key =
            ConnectorClients.ADMIN_OVERRIDE_PREFIX
                + (auth instanceof SaslAuthenticationException
                    ? "sasl.jaas.config"
                    : "security.protocol");
        value(values, key)
            .addErrorMessage(
                "the cluster at "
                    + adminSettings.get(ConnectorClients.BOOTSTRAP_SERVERS)
                    + " refused the admin client that sets the share group's configs: "
                    + auth.getMessage());
        return;
      }
      log.info(
          "Validation could not read the share group settings from the cluster ({}); checking"
              + " against Kafka's defaults",
          e.getMessage());
    }
    groupSettings(parsed, clients)
        .problems(facts)
        .forEach((key, messages) -> messages.forEach(m -> value(values, key).addErrorMessage(m)));
  }

  /**
   * The group settings of {@code config}, with the isolation level its clients' settings ask for
   * (the worker's {@code consumer.isolation.level}, the connector's {@code
   * consumer.override.isolation.level} or {@code share.consumer.isolation.level}).
   */
  static GroupSettings groupSettings(ShareSinkConfig config, ConnectorClients clients) {
    GroupSettings.Isolation unset =
        clients.worker().visible() ? null : GroupSettings.Isolation.UNKNOWN;
    return config
        .groupSettings()
        .withIsolation(clients.consumer().isolationLevel().orElse(unset))
        .withMembers(tasksMax(config));
  }

  /**
   * The connector's {@code tasks.max} (Connect's own key, validated by Connect), 0 if unreadable.
   */
  private static int tasksMax(ShareSinkConfig config) {
    Object value = config.originals().get(GroupSettings.TASKS_MAX_KEY);
    try {
      return value == null ? 0 : Integer.parseInt(value.toString().trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * A topic that does not exist is logged, not refused: Connect's validation has errors only, and
   * an error would refuse the connector, while creating the topic after the connector is a valid
   * order (the share group picks it up once it exists; the connector keeps checking).
   */
  private static void warnAboutMissingTopics(
      ShareGroupAdmin admin, ShareSinkConfig parsed, String connectorName) {
    try {
      MissingTopics.warnAtValidation(connectorName, admin.missingTopics(parsed.topics()));
    } catch (RuntimeException e) {
      log.debug("Validation could not check that topics {} exist: {}", parsed.topics(), e);
    }
  }

  private static boolean timedOut(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.util.concurrent.TimeoutException
          || t instanceof org.apache.kafka.common.errors.TimeoutException) {
        return true;
      }
    }
    return false;
  }

  private static Throwable authenticationFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof AuthenticationException) {
        return t;
      }
    }
    return null;
  }

  /**
   * The legacy sink's value with lists sharesink can add errors to: a sink may build its values
   * with immutable lists (MongoDB's sink 2.0.1 does), and the order check adds to them.
   */
  static ConfigValue mutableCopy(ConfigValue legacy) {
    ConfigValue copy =
        new ConfigValue(
            legacy.name(),
            legacy.value(),
            new ArrayList<>(legacy.recommendedValues()),
            new ArrayList<>(legacy.errorMessages()));
    copy.visible(legacy.visible());
    return copy;
  }

  private static ConfigValue value(Map<String, ConfigValue> values, String name) {
    return values.computeIfAbsent(name, ConfigValue::new);
  }

  @Override
  public void start(Map<String, String> props) {
    this.props = Collections.unmodifiableMap(new HashMap<>(props));
    ShareSinkConfig config = new ShareSinkConfig(this.props);
    if (ShareSinkConfig.ENGINE_NATIVE.equals(config.engine())) {
      NativeLoader.ensureLoaded();
    }
    String name = this.props.get("name");
    String groupId = config.groupId(name);

    StartChecks checked =
        StartChecks.run(
            config,
            this.props,
            name,
            WorkerDefaults.atStart(Time.SYSTEM, workerDefaults),
            resolver,
            StartChecks.Order.CHECK);
    Class<? extends SinkConnector> legacyClass = checked.legacyClass();
    Map<String, Object> adminSettings = checked.clients().admin();
    ShareGroupAdmin admin =
        ShareGroupAdmin.create(adminSettings, "connector-share-admin-" + name, START_ADMIN_TIMEOUT);
    GroupSettings groupSettings = groupSettings(config, checked.clients());
    boolean readCommitted;
    try {
      ShareGroupSetup.Result setup =
          ShareGroupSetup.apply(
              admin,
              groupId,
              groupSettings,
              config.topics(),
              config.migrationEnabled() ? ShareSinkConfig.classicGroupId(name) : null);
      if (config.migrationEnabled() && config.topicsRegex().isPresent()) {
        log.warn(
            "Share group {}: {} seeds offsets for the topics listed in {} only; with {} it seeds"
                + " nothing",
            groupId,
            ShareSinkConfig.MIGRATION_ENABLE_CONFIG,
            ShareSinkConfig.TOPICS_CONFIG,
            ShareSinkConfig.TOPICS_REGEX_CONFIG);
      }
      dlqMode = setup.dlqMode();
      readCommitted = setup.readCommitted();
      derivedCommitMaxRecords = derivedCommitMaxRecords(this.props, setup.recordLocks());
      if (derivedCommitMaxRecords != null) {
        log.info(
            "Share group {}: record-lock window {} records per partition; {} not set, so a commit"
                + " cycle runs once {} records have been put (half the window)",
            groupId,
            setup.recordLocks(),
            SinkDriverConfig.COMMIT_MAX_RECORDS_CONFIG,
            derivedCommitMaxRecords);
      }
    } catch (RuntimeException e) {
      admin.close();
      throw new ConnectException(
          "sharesink could not prepare share group "
              + groupId
              + " on "
              + adminSettings.get(ConnectorClients.BOOTSTRAP_SERVERS)
              + ": "
              + e.getMessage(),
          e);
    }
    // The admin client stays open for the lag gauges and the missing-topic checks.
    lag = new ShareGroupLag(admin, groupId, readCommitted, context().pluginMetrics());
    // ---- autoscale (io.sharesink.connect.autoscale): reads through the same admin client
    autoscaler =
        Autoscaler.startIfEnabled(
                this.props, admin, groupId, readCommitted, context(), context().pluginMetrics())
            .orElse(null);
    topicWatch =
        TopicWatchThread.startIfMissing(
            new MissingTopics(name, config.topics(), admin::missingTopics, Time.SYSTEM), name);

    legacyLoader = legacyClass.getClassLoader();
    legacyConnector = LegacyPlugins.newInstance(legacyClass);
    Map<String, String> legacyProps = LegacyConfigs.forConnector(this.props, legacyClass.getName());
    try {
      LoaderSwap.run(
          legacyLoader,
          () -> {
            legacyConnector.initialize(new LegacySinkConnectorContext(context()));
            legacyConnector.start(legacyProps);
          });
    } catch (RuntimeException e) {
      stop();
      throw e;
    }
    log.info(
        "Started legacy sink connector {} (version {}) in share mode: share group {} on topics {}",
        legacyClass.getName(),
        legacyVersion(),
        groupId,
        config.topicsRegex().map(p -> "matching '" + p + "'").orElse(config.topics().toString()));
  }

  // Only for the log line: a legacy connector whose version() breaks (e.g. a plugin built for
  // another Kafka release calling a moved internal class) can still run.
  private String legacyVersion() {
    try {
      return LoaderSwap.call(legacyLoader, legacyConnector::version);
    } catch (RuntimeException | LinkageError e) {
      log.warn("{}.version() failed: {}", legacyConnector.getClass().getName(), e.toString());
      return "unknown";
    }
  }

  /**
   * Called by the runtime for {@code PATCH} and {@code DELETE /connectors/{c}/offsets}, which to it
   * concern a source connector's offsets; a share-mode connector has none, and its share group's
   * start offsets are what the operator means. With sharesink's REST extension installed those
   * requests are answered before they get here (ShareOffsetsFilter); without it, refusing is the
   * only answer that is not a silent success.
   */
  @Override
  public boolean alterOffsets(
      Map<String, String> connectorConfig, Map<Map<String, ?>, Map<String, ?>> offsets) {
    String name = connectorConfig.get("name");
    String group =
        new ShareSinkConfig(connectorConfig).groupId(name == null || name.isBlank() ? "?" : name);
    throw new ConnectException(
        "the offsets of a connector in share mode are its share group's start offsets ("
            + group
            + "): install sharesink's REST extension on the workers (append"
            + " io.sharesink.connect.rest.ShareModeRestExtension to rest.extension.classes) and this endpoint reads and sets"
            + " them, or use kafka-share-groups.sh --reset-offsets --group "
            + group);
  }

  @Override
  public Class<? extends Task> taskClass() {
    return ShareSinkTask.class;
  }

  /**
   * The legacy connector's task configs, each with our keys, the connector-level settings it lacks
   * (converters, transforms, errors.*; their names listed so the task strips them again before the
   * legacy task sees them), the legacy task class, the connector name, the task id and the resolved
   * DLQ mode. The runtime then adds {@code task.class} (ours) and {@code topics}.
   */
  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    // ---- autoscale (io.sharesink.connect.autoscale): the decided count, at most maxTasks
    int tasks = autoscaler == null ? maxTasks : autoscaler.tasks(maxTasks);
    List<Map<String, String>> legacyConfigs =
        LoaderSwap.call(legacyLoader, () -> legacyConnector.taskConfigs(tasks));
    Class<? extends Task> legacyTaskClass =
        LoaderSwap.call(legacyLoader, legacyConnector::taskClass);
    Map<String, String> shareProps = props;
    if (derivedCommitMaxRecords != null) {
      shareProps = new HashMap<>(props);
      shareProps.put(
          SinkDriverConfig.COMMIT_MAX_RECORDS_CONFIG, derivedCommitMaxRecords.toString());
    }
    return taskConfigs(legacyConfigs, legacyTaskClass.getName(), shareProps, dlqMode);
  }

  /**
   * The on-demand commit threshold for a group whose record-lock window is {@code recordLocks}:
   * half of it, so a task holding a single partition commits, and a later put confirms, before the
   * broker stops lending it records; null when {@value ShareSinkConfig#COMMIT_MAX_RECORDS_CONFIG}
   * is set (an explicit value wins).
   */
  static Integer derivedCommitMaxRecords(Map<String, String> props, long recordLocks) {
    if (props.containsKey(SinkDriverConfig.COMMIT_MAX_RECORDS_CONFIG)) {
      return null;
    }
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, recordLocks / 2));
  }

  /** The task configs for the legacy ones; see {@link #taskConfigs(int)}. */
  static List<Map<String, String>> taskConfigs(
      List<Map<String, String>> legacyConfigs,
      String legacyTaskClass,
      Map<String, String> props,
      String dlqMode) {
    Map<String, String> shareKeys = LegacyConfigs.shareKeys(props);
    List<Map<String, String>> configs = new ArrayList<>(legacyConfigs.size());
    for (int taskId = 0; taskId < legacyConfigs.size(); taskId++) {
      Map<String, String> taskConfig = new HashMap<>(legacyConfigs.get(taskId));
      List<String> added = new ArrayList<>();
      props.forEach(
          (key, value) -> {
            if (isConnectorLevel(key) && !taskConfig.containsKey(key)) {
              taskConfig.put(key, value);
              added.add(key);
            }
          });
      // The sink runtime hands its tasks the topic choice; a source task config lacks it unless
      // the legacy connector copied it.
      for (String key :
          List.of(ShareSinkConfig.TOPICS_CONFIG, ShareSinkConfig.TOPICS_REGEX_CONFIG)) {
        if (props.containsKey(key)) {
          taskConfig.putIfAbsent(key, props.get(key));
        }
      }
      taskConfig.putAll(shareKeys);
      taskConfig.put(ShareSinkConfig.SINK_TASK_CLASS_CONFIG, legacyTaskClass);
      taskConfig.put(ShareSinkConfig.CONNECTOR_NAME_CONFIG, props.get("name"));
      taskConfig.put(ShareSinkConfig.TASK_ID_CONFIG, Integer.toString(taskId));
      taskConfig.put(ShareSinkConfig.DLQ_RESOLVED_CONFIG, dlqMode);
      if (!added.isEmpty()) {
        Collections.sort(added);
        taskConfig.put(ShareSinkConfig.ADDED_KEYS_CONFIG, String.join(",", added));
      }
      configs.add(taskConfig);
    }
    return configs;
  }

  static boolean isConnectorLevel(String key) {
    return CONNECTOR_LEVEL_PREFIXES.stream().anyMatch(key::startsWith);
  }

  @Override
  public void stop() {
    if (topicWatch != null) {
      topicWatch.close();
      topicWatch = null;
    }
    if (autoscaler != null) {
      autoscaler.close();
      autoscaler = null;
    }
    if (lag != null) {
      lag.close();
      lag = null;
    }
    if (legacyConnector != null) {
      LoaderSwap.run(legacyLoader, legacyConnector::stop);
      legacyConnector = null;
    }
  }
}
