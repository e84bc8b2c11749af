package io.sharesink.connect.ordering;

import static io.sharesink.connect.ShareSinkConfig.ORDERING_CHECK;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_CONFIG;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_OFFSET_GUARDED;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_UNORDERED;

import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareSinkConfig;
import io.sharesink.connect.ordering.KnownSinks.Kind;
import io.sharesink.connect.ordering.KnownSinks.Sink;
import io.sharesink.connect.ordering.KnownSinks.Trigger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * {@value ShareSinkConfig#ORDERING_CONFIG}: the operator's choice about order, and the check that a
 * share-mode connector of a kind {@link KnownSinks} lists is never silently wrong. Validation
 * reports each problem on the key that causes it (a sink setting such as {@code insert.mode}, the
 * legacy sink's class, or {@value ShareSinkConfig#ORDERING_CONFIG} itself), so that it lands on a
 * key the operator wrote in both forms of the configuration: {@value
 * ShareSinkConfig#SINK_CONNECTOR_CLASS_CONFIG} is shown as {@code connector.class} in the flag
 * form. The connector's start refuses the same configurations (one stored before this check
 * existed, say).
 */
public final class ShareOrdering {

  private ShareOrdering() {}

  /** The reference's section about order, named in messages. */
  public static final String DOCS = "docs/configuration.md, \"Order in share mode\"";

  /**
   * What is wrong with a share-mode configuration as to order, keyed by the setting to report it
   * on; empty when nothing is.
   *
   * @param props the connector's configuration (stored form)
   * @param loader loads the legacy sink's class from its name or alias; may throw (then the name is
   *     matched as written)
   */
  public static Map<String, List<String>> problems(
      Map<String, String> props, Function<String, Class<?>> loader) {
    Map<String, List<String>> problems = new LinkedHashMap<>();
    String choice = choice(props);
    Optional<Sink> sink = sinkOf(props, loader);
    sink.ifPresent(s -> sinkProblems(s, props, choice, problems));
    if (ORDERING_OFFSET_GUARDED.equals(choice) && !carriesCoordinates(props)) {
      add(
          problems,
          ORDERING_CONFIG,
          orderingIs(ORDERING_OFFSET_GUARDED)
              + " says the sink's target keeps each key's newest version by the record's"
              + " partition and offset, but no transform carries them into the record: add"
              + " transforms of type org.apache.kafka.connect.transforms.InsertField$Value with"
              + " offset.field and partition.field (see "
              + DOCS
              + "), or choose "
              + orderingIs(ORDERING_UNORDERED));
    }
    return problems;
  }

  /**
   * Refuses, at connector start, what validation refuses.
   *
   * @throws ConnectException naming every problem
   */
  public static void ensureRunnable(Map<String, String> props, Class<?> legacyClass) {
    Map<String, List<String>> problems = problems(props, name -> legacyClass);
    if (problems.isEmpty()) {
      return;
    }
    List<String> messages = new ArrayList<>();
    problems.forEach((key, list) -> list.forEach(m -> messages.add(key + ": " + m)));
    throw new ConnectException(
        "sharesink will not run connector "
            + props.get("name")
            + " in share mode: "
            + String.join("; ", messages));
  }

  private static String choice(Map<String, String> props) {
    String value = props.get(ORDERING_CONFIG);
    return value == null || value.isBlank()
        ? ORDERING_CHECK
        : value.trim().toLowerCase(Locale.ROOT);
  }

  private static Optional<Sink> sinkOf(
      Map<String, String> props, Function<String, Class<?>> loader) {
    String name = props.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG);
    if (name == null || name.isBlank()) {
      return Optional.empty();
    }
    try {
      Class<?> loaded = loader.apply(name.trim());
      if (loaded != null) {
        return KnownSinks.of(loaded);
      }
    } catch (RuntimeException | LinkageError e) {
      // Not loadable here (reported on the key by its own validator): match the name as written.
    }
    return KnownSinks.of(name);
  }

  private static void sinkProblems(
      Sink sink, Map<String, String> props, String choice, Map<String, List<String>> problems) {
    String className = props.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG).trim();
    if (sink.kind() == Kind.SAFE) {
      return;
    }
    if (sink.kind() == Kind.SELF_COMMITTING) {
      List<Setting> set =
          sink.triggers().stream().flatMap(t -> settingOff(sink, t, props).stream()).toList();
      if (!sink.triggers().isEmpty() && set.isEmpty()) {
        return;
      }
      String because = set.isEmpty() ? "" : " with " + set.get(0).describe();
      add(
          problems,
          set.isEmpty() || set.get(0).trigger().always()
              ? ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG
              : set.get(0).key(),
          "the "
              + sink.name()
              + " ("
              + className
              + ")"
              + because
              + " cannot run in share mode: it "
              + sink.why()
              + ". Run it on the classic runtime ("
              + classicRuntime(props, className)
              + ")");
      return;
    }
    for (Trigger trigger : sink.triggers()) {
      Optional<Setting> off = settingOff(sink, trigger, props);
      if (off.isEmpty()) {
        continue;
      }
      String setting = off.get().describe();
      String reportOn =
          trigger.always() ? ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG : off.get().key();
      String situation =
          "in share mode the versions of one key reach the sink's tasks in no fixed order, and the "
              + sink.name()
              + " with "
              + setting
              + " "
              + trigger.effect()
              + ", silently.";
      String problem = setting + ": " + situation;
      if (ORDERING_CHECK.equals(choice)) {
        add(
            problems,
            reportOn,
            problem
                + " Choose one: run this connector on the classic runtime ("
                + classicRuntime(props, className)
                + ")"
                + (trigger.guardable()
                    ? "; or carry each record's partition and offset into the row and keep the"
                        + " newest version with a write guard"
                        + (sink.guard() != null ? " (" + sink.guard() + ")" : "")
                        + " (see "
                        + DOCS
                        + "), then set "
                        + orderingIs(ORDERING_OFFSET_GUARDED)
                    : "")
                + "; or set "
                + orderingIs(ORDERING_UNORDERED)
                + " if writes in any order are acceptable (each key written once, say)");
      } else if (ORDERING_OFFSET_GUARDED.equals(choice) && !trigger.guardable()) {
        add(
            problems,
            reportOn,
            problem
                + " A guard on the partition and offset cannot order it ("
                + orderingIs(ORDERING_OFFSET_GUARDED)
                + "): a hard delete removes the row that held them, and this target has no write"
                + " guard for it. "
                + (trigger.always()
                    ? ""
                    : "Write deletes as rows (a soft-delete column) or turn "
                        + trigger.key()
                        + " off, ")
                + "run this connector on the classic runtime ("
                + classicRuntime(props, className)
                + "), or set "
                + orderingIs(ORDERING_UNORDERED));
      }
    }
  }

  /** {@code share.ordering=value}, as messages name a choice. */
  private static String orderingIs(String value) {
    return ORDERING_CONFIG + "=" + value;
  }

  /**
   * Where the connector sets {@code trigger} off: its key (its value, or the sink's default when
   * unset), else a per-topic form of the key the sink reads ({@link Sink#perTopicKeys}); empty when
   * nowhere.
   */
  private static Optional<Setting> settingOff(
      Sink sink, Trigger trigger, Map<String, String> props) {
    if (trigger.always()) {
      return Optional.of(new Setting(trigger, null, null));
    }
    if (trigger.matches(props.get(trigger.key()))) {
      return Optional.of(new Setting(trigger, trigger.key(), props.get(trigger.key())));
    }
    return props.keySet().stream()
        .sorted()
        .filter(k -> sink.readsPerTopic(k, trigger.key()))
        .filter(k -> props.get(k) != null && trigger.matches(props.get(k)))
        .findFirst()
        .map(k -> new Setting(trigger, k, props.get(k)));
  }

  /** A trigger set off by the connector's {@code value} of {@code key} (null: the default). */
  private record Setting(Trigger trigger, String key, String value) {
    String describe() {
      if (trigger.always()) {
        return "any configuration";
      }
      return value != null
          ? key + "=" + value.trim()
          : key + "=" + trigger.sinkDefault() + " (its default)";
    }
  }

  /** How this connector moves to the classic runtime, in the form the operator wrote it. */
  static String classicRuntime(Map<String, String> props, String className) {
    String form = props.get(ShareSinkConfig.FORM_CONFIG);
    if (ShareModeForm.FORM_FLAG.equals(form)) {
      return "remove " + ShareModeForm.FLAG_CONFIG + "=" + ShareModeForm.SHARE;
    }
    if (ShareModeForm.FORM_WORKER_DEFAULT.equals(form)) {
      return "set " + ShareModeForm.FLAG_CONFIG + "=classic on it";
    }
    return "connector.class=" + className + " without the share.* settings";
  }

  /**
   * Whether the connector's transforms include an InsertField on the value that adds the record's
   * offset and partition (both are needed: offsets of different partitions do not compare).
   */
  static boolean carriesCoordinates(Map<String, String> props) {
    String aliases = props.get("transforms");
    if (aliases == null || aliases.isBlank()) {
      return false;
    }
    for (String alias : aliases.split(",")) {
      String prefix = "transforms." + alias.trim() + ".";
      String type = props.get(prefix + "type");
      if (type != null
          && (type.trim().endsWith("InsertField$Value"))
          && notBlank(props.get(prefix + "offset.field"))
          && notBlank(props.get(prefix + "partition.field"))) {
        return true;
      }
    }
    return false;
  }

  private static boolean notBlank(String s) {
    return s != null && !s.isBlank();
  }

  private static void add(Map<String, List<String>> problems, String key, String message) {
    problems.computeIfAbsent(key, k -> new ArrayList<>()).add(message);
  }
}
