package io.sharesink.connect;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The two forms of a share-mode connector's configuration, and the rewrites between them that
 * sharesink's REST extension makes.
 *
 * <p><b>The operator's form</b> (the KIP's): the legacy sink's own {@code connector.class} with
 * {@value #FLAG_CONFIG}{@code =share}, or without it on a worker whose {@value
 * #WORKER_DEFAULT_CONFIG} is {@code share}. <b>The stored form</b>: what the worker keeps and runs,
 * the same map with {@code connector.class} set to {@link ShareSinkConnector}, the operator's class
 * moved to {@value ShareSinkConfig#SINK_CONNECTOR_CLASS_CONFIG}, {@value
 * ShareSinkConfig#FORM_CONFIG} saying which switch was used and the switch's value moved to {@value
 * ShareSinkConfig#FORM_FLAG_VALUE_CONFIG} (see there why). Nothing else changes, so {@link
 * #toOperator} gives back exactly the map the operator wrote, and a stored form given again (a
 * follower forwarding a request to the leader) is kept as it is.
 */
public final class ShareModeForm {

  /** The KIP's switch on a sink connector. */
  public static final String FLAG_CONFIG = "consumer.override.group.protocol";

  /** The switch's value that turns share mode on. */
  public static final String SHARE = "share";

  /**
   * Worker setting read by the REST extension: {@code share} runs every sink connector created or
   * updated without {@value #FLAG_CONFIG} in share mode (the KIP's "for the whole worker"); {@code
   * classic} (default) leaves them on the classic runtime.
   */
  public static final String WORKER_DEFAULT_CONFIG = "sharesink.default.group.protocol";

  /** {@value ShareSinkConfig#FORM_CONFIG}: share mode from {@value #FLAG_CONFIG}. */
  public static final String FORM_FLAG = "flag";

  /** {@value ShareSinkConfig#FORM_CONFIG}: share mode from the worker-wide default. */
  public static final String FORM_WORKER_DEFAULT = "worker-default";

  static final String CONNECTOR_CLASS = LegacyConfigs.CONNECTOR_CLASS;

  private ShareModeForm() {}

  /** What a connector class is, as far as the worker's plugins tell. */
  public enum ClassKind {
    SINK,
    OTHER,
    /** Not loadable here: left to the runtime, which reports it. */
    UNKNOWN
  }

  /** Resolves a connector class name or alias. */
  @FunctionalInterface
  public interface ClassResolver {
    ClassKind kind(String connectorClass);
  }

  /** A request the extension refuses: a 400 with this message. */
  public static final class InvalidForm extends RuntimeException {
    public InvalidForm(String message) {
      super(message);
    }
  }

  /** Whether {@code value} (a {@code connector.class}) names {@link ShareSinkConnector}. */
  public static boolean isShareSinkConnector(String value) {
    if (value == null) {
      return false;
    }
    String v = value.trim();
    return v.equals(ShareSinkConnector.class.getName())
        || v.equals(ShareSinkConnector.class.getSimpleName())
        || v.equals("ShareSink");
  }

  /**
   * Whether the switch asks for share mode: {@code Optional.of(true)} for {@code share}, {@code
   * Optional.of(false)} for any other value (the classic runtime's {@code classic} or {@code
   * consumer}), empty when the key is not set.
   */
  static Optional<Boolean> flag(Map<String, String> config) {
    String value = config.get(FLAG_CONFIG);
    if (value == null) {
      return Optional.empty();
    }
    return Optional.of(SHARE.equals(value.trim().toLowerCase(Locale.ROOT)));
  }

  /** Whether a worker setting {@value #WORKER_DEFAULT_CONFIG} turns share mode on by default. */
  public static boolean workerDefaultIsShare(Map<String, ?> workerConfig) {
    Object value = workerConfig.get(WORKER_DEFAULT_CONFIG);
    if (value == null) {
      return false;
    }
    String v = value.toString().trim().toLowerCase(Locale.ROOT);
    if (v.equals(SHARE)) {
      return true;
    }
    if (v.isEmpty() || v.equals("classic")) {
      return false;
    }
    throw new InvalidForm(
        "worker setting " + WORKER_DEFAULT_CONFIG + "=" + value + " must be 'share' or 'classic'");
  }

  /**
   * The configuration to store for what the operator wrote: the stored form when share mode is
   * asked for on a sink connector, otherwise the map unchanged (the same instance).
   *
   * @throws InvalidForm when the operator's map cannot be turned into share mode as written
   */
  public static Map<String, String> toStored(
      Map<String, String> operator, boolean workerDefaultShare, ClassResolver classes) {
    String connectorClass = operator.get(CONNECTOR_CLASS);
    if (connectorClass == null
        || connectorClass.isBlank()
        || isShareSinkConnector(connectorClass)
        || operator.containsKey(ShareSinkConfig.FORM_CONFIG)) {
      // No class (the runtime says so), the explicit form, or a stored form forwarded again.
      return operator;
    }
    Optional<Boolean> flag = flag(operator);
    boolean share = flag.orElse(workerDefaultShare);
    if (!share) {
      return operator;
    }
    ClassKind kind = classes.kind(connectorClass.trim());
    if (kind == ClassKind.UNKNOWN) {
      return operator; // the runtime reports a class it cannot find, in its own words
    }
    if (kind != ClassKind.SINK) {
      if (flag.isEmpty()) {
        return operator; // the worker-wide default concerns sink connectors only
      }
      throw new InvalidForm(
          FLAG_CONFIG
              + "=share runs a sink connector on a share group, but "
              + connectorClass.trim()
              + " is not a sink connector");
    }
    if (operator.containsKey(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG)) {
      throw new InvalidForm(
          "with "
              + FLAG_CONFIG
              + "=share, connector.class names the sink; remove "
              + ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG
              + " (or set connector.class="
              + ShareSinkConnector.class.getName()
              + " and drop "
              + FLAG_CONFIG
              + ")");
    }
    Map<String, String> stored = new LinkedHashMap<>(operator);
    stored.put(CONNECTOR_CLASS, ShareSinkConnector.class.getName());
    stored.put(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, connectorClass);
    stored.put(ShareSinkConfig.FORM_CONFIG, flag.isPresent() ? FORM_FLAG : FORM_WORKER_DEFAULT);
    String flagValue = stored.remove(FLAG_CONFIG);
    if (flagValue != null) {
      stored.put(ShareSinkConfig.FORM_FLAG_VALUE_CONFIG, flagValue);
    }
    return stored;
  }

  /**
   * Whether a stored configuration came from the operator's form: {@link ShareSinkConnector} with
   * sharesink's bookkeeping. The same keys on any other class (a PUT may carry any map) do not make
   * it one, so such a connector is never shown as another class or type.
   */
  public static boolean isStoredForm(Map<String, String> stored) {
    return stored != null
        && isShareSinkConnector(stored.get(CONNECTOR_CLASS))
        && stored.containsKey(ShareSinkConfig.FORM_CONFIG)
        && stored.containsKey(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
  }

  /**
   * Why the bookkeeping of a configuration to be stored would make the API show a switch that is
   * not what runs; empty when it would not. A configuration in the stored form ({@link
   * ShareSinkConnector} with {@value ShareSinkConfig#FORM_CONFIG}) must say which switch made it
   * ({@value #FORM_FLAG} with the switch's value {@code share} under {@value
   * ShareSinkConfig#FORM_FLAG_VALUE_CONFIG}, or {@value #FORM_WORKER_DEFAULT} with none) and name
   * its sink: only then is {@link #toOperator} a configuration that runs on a share group. The
   * extension's own rewrites always satisfy this; a PUT of a hand-written stored form, or a PATCH
   * of its keys however it arrives, need not.
   */
  public static Optional<String> bookkeepingProblem(Map<String, String> config) {
    if (config == null
        || !isShareSinkConnector(config.get(CONNECTOR_CLASS))
        || !config.containsKey(ShareSinkConfig.FORM_CONFIG)) {
      return Optional.empty(); // no stored form: shown as it is stored
    }
    String form = trimmed(config.get(ShareSinkConfig.FORM_CONFIG));
    String flagValue = config.get(ShareSinkConfig.FORM_FLAG_VALUE_CONFIG);
    String sink = config.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    if (sink == null || sink.isBlank()) {
      return Optional.of(
          ShareSinkConfig.FORM_CONFIG
              + " marks a connector stored from the operator's form, which names its sink in "
              + ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    }
    if (FORM_FLAG.equals(form)) {
      if (flagValue == null || !SHARE.equals(trimmed(flagValue).toLowerCase(Locale.ROOT))) {
        return Optional.of(
            ShareSinkConfig.FORM_CONFIG
                + "="
                + FORM_FLAG
                + " needs "
                + ShareSinkConfig.FORM_FLAG_VALUE_CONFIG
                + "=share: the connector runs on a share group, so the API must not show "
                + FLAG_CONFIG
                + (flagValue == null ? " missing" : "=" + flagValue));
      }
      return Optional.empty();
    }
    if (FORM_WORKER_DEFAULT.equals(form)) {
      if (flagValue != null) {
        return Optional.of(
            ShareSinkConfig.FORM_CONFIG
                + "="
                + FORM_WORKER_DEFAULT
                + " means no "
                + FLAG_CONFIG
                + " was written: remove "
                + ShareSinkConfig.FORM_FLAG_VALUE_CONFIG);
      }
      return Optional.empty();
    }
    return Optional.of(
        ShareSinkConfig.FORM_CONFIG
            + " must be "
            + FORM_FLAG
            + " or "
            + FORM_WORKER_DEFAULT
            + ", not "
            + form);
  }

  private static String trimmed(String value) {
    return value == null ? "" : value.trim();
  }

  /** What the operator wrote, for a stored configuration; any other map unchanged. */
  public static Map<String, String> toOperator(Map<String, String> stored) {
    if (!isStoredForm(stored)) {
      return stored;
    }
    Map<String, String> operator = new LinkedHashMap<>(stored);
    operator.put(CONNECTOR_CLASS, operator.remove(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG));
    operator.remove(ShareSinkConfig.FORM_CONFIG);
    String flagValue = operator.remove(ShareSinkConfig.FORM_FLAG_VALUE_CONFIG);
    if (flagValue != null) {
      operator.put(FLAG_CONFIG, flagValue);
    }
    return operator;
  }

  /**
   * A task configuration of a share-mode connector as the classic runtime would have shown it: the
   * legacy connector's task config with the legacy task class as {@code task.class}, without
   * sharesink's keys or the connector-level keys sharesink copied in. Any other map unchanged.
   */
  public static Map<String, String> taskToOperator(Map<String, String> taskConfig) {
    String legacyTaskClass =
        taskConfig == null ? null : taskConfig.get(ShareSinkConfig.SINK_TASK_CLASS_CONFIG);
    if (legacyTaskClass == null) {
      return taskConfig;
    }
    return LegacyConfigs.forTask(taskConfig, legacyTaskClass);
  }

  /**
   * A PATCH applied to a configuration as the runtime applies it: each key set to its new value, a
   * key patched to null removed.
   */
  public static Map<String, String> patched(
      Map<String, String> current, Map<String, String> patch) {
    Map<String, String> out = new HashMap<>(current);
    patch.forEach(
        (key, value) -> {
          if (value == null) {
            out.remove(key);
          } else {
            out.put(key, value);
          }
        });
    return out;
  }
}
