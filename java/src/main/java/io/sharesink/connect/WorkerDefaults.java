package io.sharesink.connect;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's configuration, which decides what a sink connector gets from the worker: its
 * clients' settings ({@link ConnectorClients}), its override policy and its default converters with
 * their prefixed settings. A plugin cannot see the worker's configuration object, but the file is
 * named on the worker's command line ({@code ConnectDistributed <file>}, {@code ConnectStandalone
 * <file> [connector files]}). Where sharesink's REST extension is installed, the worker hands it
 * its configuration, which is then preferred to the file.
 *
 * <p>When neither can be seen (no extension handed it over, and no readable file after a Connect
 * main class on the command line) the result is {@linkplain #visible() not visible}: it holds no
 * setting, and {@link ClientOverridePolicy} then refuses every client override, as under {@code
 * None}, with one WARN naming the fix. The herder starts connectors and tasks before the worker
 * configures its REST extensions, so a start first waits a little for the extension ({@link
 * #atStart}).
 */
final class WorkerDefaults {

  private static final Logger log = LoggerFactory.getLogger(WorkerDefaults.class);

  /** Main classes whose first argument is the worker configuration file. */
  static final List<String> WORKER_MAIN_CLASSES =
      List.of(
          "org.apache.kafka.connect.cli.ConnectDistributed",
          "org.apache.kafka.connect.cli.ConnectStandalone");

  static final List<String> CONVERTER_KEYS =
      List.of("key.converter", "value.converter", "header.converter");

  /** Parsed files by path and modification time: tasks start often, the file rarely changes. */
  private static final Map<String, WorkerDefaults> cache = new ConcurrentHashMap<>();

  /** Connect's default for the worker's {@code bootstrap.servers} (WorkerConfig's). */
  static final String DEFAULT_BOOTSTRAP_SERVERS = "localhost:9092";

  /** An empty, visible configuration: the worker sets nothing (tests). */
  static final WorkerDefaults NONE = new WorkerDefaults(null, Map.of());

  /**
   * How long a connector's or task's start waits for the REST extension's handoff when the worker's
   * configuration cannot be seen otherwise: the worker configures its REST extensions right after
   * it starts the herder (Connect's {@code Connect.start}), well within this on a worker that has
   * the extension; a worker without it pays this once per start, and is told why in the WARN.
   */
  static final Duration EXTENSION_WAIT = Duration.ofSeconds(10);

  /** The fix, for the WARN and for every refusal an invisible configuration causes. */
  static final String HOW_TO_MAKE_VISIBLE =
      "add io.sharesink.connect.rest.ShareModeRestExtension to the worker's"
          + " rest.extension.classes (appended to any extensions it already lists), or start the"
          + " worker with its configuration file as the first argument of "
          + "org.apache.kafka.connect.cli.ConnectDistributed (or ConnectStandalone)";

  /** Notified when the REST extension hands the worker's configuration over. */
  private static final Object HANDOFF = new Object();

  /** Reasons already warned about: one WARN per reason and JVM. */
  private static final Set<String> warnedInvisible = ConcurrentHashMap.newKeySet();

  /**
   * The worker's own configuration, as the worker handed it to sharesink's REST extension ({@code
   * Configurable.configure}); null when the extension is not installed on this worker. The
   * extension and the connectors share this plugin's class loader, so they share this field.
   */
  private static volatile WorkerDefaults fromRestExtension;

  private final Path file;
  private final Map<String, String> settings;
  private final boolean fromWorker;

  /** Why the worker's configuration cannot be seen; null when it can. */
  private final String invisibleBecause;

  WorkerDefaults(Path file, Map<String, String> settings) {
    this(file, settings, false, null);
  }

  private WorkerDefaults(
      Path file, Map<String, String> settings, boolean fromWorker, String invisibleBecause) {
    this.file = file;
    this.settings = Map.copyOf(settings);
    this.fromWorker = fromWorker;
    this.invisibleBecause = invisibleBecause;
  }

  /** A worker configuration sharesink cannot see, and why. */
  static WorkerDefaults invisible(String because) {
    return new WorkerDefaults(null, Map.of(), false, because);
  }

  /**
   * Whether these are the worker's settings. When not, nothing is known of the worker's policy, and
   * every client override is refused ({@link ClientOverridePolicy#of}).
   */
  boolean visible() {
    return invisibleBecause == null;
  }

  /** Why the worker's configuration cannot be seen, when it cannot. */
  Optional<String> invisibleBecause() {
    return Optional.ofNullable(invisibleBecause);
  }

  /**
   * One WARN per reason and JVM when the worker's configuration cannot be seen: the policy is then
   * taken as {@code None}. Returns whether it warned.
   */
  boolean warnOnceIfInvisible() {
    if (invisibleBecause == null || !warnedInvisible.add(invisibleBecause)) {
      return false;
    }
    {
      log.warn(
          "sharesink cannot see this worker's configuration: {}. It therefore takes the worker's {}"
              + " as None: every client setting a share-mode connector adds (consumer.override.*,"
              + " share.consumer.*, share.group.id, producer.override.*, admin.override.*) is"
              + " refused, and the worker's consumer.*, producer.* and admin.* settings are not"
              + " applied. To fix it, {}",
          invisibleBecause,
          ClientOverridePolicy.POLICY_CONFIG,
          HOW_TO_MAKE_VISIBLE);
    }
    return true;
  }

  /**
   * Records the worker configuration the REST extension received; from then on it is preferred to
   * the file on the command line.
   */
  static void useRestExtensionConfig(Map<String, ?> workerConfig) {
    Map<String, String> settings = new HashMap<>();
    workerConfig.forEach(
        (key, value) -> {
          if (key != null && value != null) {
            settings.put(key, value.toString().trim());
          }
        });
    synchronized (HANDOFF) {
      fromRestExtension = new WorkerDefaults(null, settings, true, null);
      HANDOFF.notifyAll();
    }
    log.info(
        "sharesink takes worker defaults from the worker configuration handed to its REST"
            + " extension ({} settings)",
        settings.size());
  }

  /** Forgets the REST extension's worker configuration (its close(), and tests). */
  static void clearRestExtensionConfig() {
    fromRestExtension = null;
  }

  /** Whether these settings are the worker's own configuration, from the REST extension. */
  boolean fromRestExtension() {
    return fromWorker;
  }

  /** The file these defaults come from, if any. */
  Optional<Path> file() {
    return Optional.ofNullable(file);
  }

  /**
   * The worker's {@code bootstrap.servers}, with Connect's default when unset (the worker then
   * connects there itself, and so do the clients it builds for connectors).
   */
  String bootstrapServers() {
    return settings.getOrDefault("bootstrap.servers", DEFAULT_BOOTSTRAP_SERVERS);
  }

  /** Every setting of the worker file (variables resolved where the worker's providers allow). */
  Map<String, String> settings() {
    return settings;
  }

  /**
   * The worker's own topics (distributed mode's {@code config.storage.topic}, {@code
   * offset.storage.topic}, {@code status.storage.topic}), as far as its settings name them: a topic
   * pattern must never consume them.
   */
  Set<String> internalTopics() {
    Set<String> topics = new HashSet<>();
    for (String key : INTERNAL_TOPIC_KEYS) {
      String topic = settings.get(key);
      if (topic != null && !topic.isBlank()) {
        topics.add(topic.trim());
      }
    }
    return topics;
  }

  static final List<String> INTERNAL_TOPIC_KEYS =
      List.of("config.storage.topic", "offset.storage.topic", "status.storage.topic");

  /**
   * The worker's default for one converter ({@code key.converter}, ...): its class and its {@code
   * <key>.}-prefixed settings, with their full names. Empty when the worker sets none.
   */
  Map<String, String> converter(String converterKey) {
    Map<String, String> out = new HashMap<>();
    String prefix = converterKey + ".";
    settings.forEach(
        (key, value) -> {
          if (key.equals(converterKey) || key.startsWith(prefix)) {
            out.put(key, value);
          }
        });
    return out;
  }

  /**
   * The worker's configuration: as the worker handed it to sharesink's REST extension, else the
   * file named on the worker's command line, else an {@linkplain #invisible invisible} one saying
   * why. Only the worker process decides where its configuration is: no connector setting can name
   * another file.
   */
  static WorkerDefaults current() {
    WorkerDefaults worker = fromRestExtension;
    if (worker != null) {
      return worker;
    }
    Optional<String> named = commandLineArgument();
    if (named.isEmpty()) {
      return invisible(
          "its REST extension has not been handed the worker's configuration, and this JVM's"
              + " command line names no worker configuration file after "
              + String.join(" or ", WORKER_MAIN_CLASSES));
    }
    Path path = Path.of(named.get());
    if (!readableFile(path)) {
      return invisible(
          "its REST extension has not been handed the worker's configuration, and the worker"
              + " configuration file "
              + path
              + " named on this JVM's command line cannot be read (it is missing, not a regular"
              + " file, or not readable by the worker's user)");
    }
    try {
      return read(path);
    } catch (IllegalArgumentException e) {
      return invisible(e.getMessage());
    }
  }

  /**
   * {@link #current()} for a connector's or task's start. The herder starts them before the worker
   * configures its REST extensions, so while the configuration cannot be seen this waits up to
   * {@link #EXTENSION_WAIT} (on {@code time}) for the extension's handoff, then asks {@code
   * current} again. A visible configuration is returned at once.
   */
  static WorkerDefaults atStart(Time time, Supplier<WorkerDefaults> current) {
    WorkerDefaults worker = current.get();
    if (worker.visible()) {
      return worker;
    }
    long deadlineMs = time.milliseconds() + EXTENSION_WAIT.toMillis();
    try {
      time.waitObject(HANDOFF, () -> fromRestExtension != null, deadlineMs);
    } catch (TimeoutException e) {
      // nothing was handed over: the configuration stays invisible
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return current.get();
  }

  static WorkerDefaults read(Path path) {
    String key;
    try {
      key = path.toAbsolutePath() + "@" + Files.getLastModifiedTime(path).toMillis();
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read the worker configuration file " + path + ": " + e, e);
    }
    return cache.computeIfAbsent(key, k -> new WorkerDefaults(path, parse(path)));
  }

  private static Map<String, String> parse(Path path) {
    Properties properties = new Properties();
    try (Reader reader = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
      properties.load(reader);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot read the worker configuration file " + path + ": " + e, e);
    }
    Map<String, String> raw = new HashMap<>();
    properties.stringPropertyNames().forEach(k -> raw.put(k, properties.getProperty(k).trim()));
    return resolveVariables(raw, path);
  }

  /**
   * Resolves {@code ${provider:path:key}} references with the config providers the worker file
   * declares ({@code config.providers}), as the worker does for its own settings. On failure the
   * raw values are kept: the engine then reports the unresolved value, never a silent guess.
   */
  private static Map<String, String> resolveVariables(Map<String, String> raw, Path path) {
    if (!raw.containsKey("config.providers")
        || raw.values().stream().noneMatch(v -> v.contains("${"))) {
      return raw;
    }
    try {
      AbstractConfig resolved = new AbstractConfig(new ConfigDef(), raw, raw, false);
      Map<String, String> out = new HashMap<>();
      resolved.originals().forEach((k, v) -> out.put(k, v == null ? null : v.toString()));
      return out;
    } catch (RuntimeException e) {
      log.warn(
          "Could not resolve config provider variables in the worker configuration file {}: {}",
          path,
          e.toString());
      return raw;
    }
  }

  /** The argument after a Connect main class on this JVM's command line, readable or not. */
  static Optional<String> commandLineArgument() {
    Optional<String[]> arguments = ProcessHandle.current().info().arguments();
    if (arguments.isPresent()) {
      Optional<String> found = argumentAfterMain(Arrays.asList(arguments.get()));
      if (found.isPresent()) {
        return found;
      }
    }
    return argumentAfterMain(System.getProperty("sun.java.command"));
  }

  /** The argument right after a Connect main class, in a JVM's argument list. */
  static Optional<String> argumentAfterMain(List<String> arguments) {
    for (int i = 0; i + 1 < arguments.size(); i++) {
      if (WORKER_MAIN_CLASSES.contains(arguments.get(i))) {
        return Optional.of(arguments.get(i + 1));
      }
    }
    return Optional.empty();
  }

  /**
   * From {@code sun.java.command} ("main-class arg1 arg2 ..."): the first argument. Paths with
   * spaces cannot be told apart from two arguments here; the argument list above comes first.
   */
  static Optional<String> argumentAfterMain(String javaCommand) {
    if (javaCommand == null || javaCommand.isBlank()) {
      return Optional.empty();
    }
    String[] parts = javaCommand.trim().split("\\s+");
    if (parts.length < 2 || !WORKER_MAIN_CLASSES.contains(parts[0])) {
      return Optional.empty();
    }
    return Optional.of(parts[1]);
  }

  /** Whether {@code path} is a file the worker's configuration can be read from. */
  static boolean readableFile(Path path) {
    return Files.isRegularFile(path) && Files.isReadable(path);
  }

  @Override
  public String toString() {
    if (fromWorker) {
      return "the worker configuration (handed to sharesink's REST extension)";
    }
    if (invisibleBecause != null) {
      return "no worker configuration sharesink can see";
    }
    return file == null ? "no worker configuration file" : "worker configuration file " + file;
  }
}
