package io.sharesink.connect;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * The validators of {@link ShareSinkConfig}'s keys, and the check across keys that no single
 * validator can make ({@link #topicChoiceProblems}). Each validator's {@code toString} is the
 * "Valid values" of its key in the configuration reference.
 */
final class ConfigValidators {

  private ConfigValidators() {}

  /**
   * What is wrong with the choice of topics, as Connect's SinkConnectorConfig checks it: exactly
   * one of {@value ShareSinkConfig#TOPICS_CONFIG} and {@value ShareSinkConfig#TOPICS_REGEX_CONFIG};
   * the DLQ topic not among them. Keyed by the setting to blame; empty when nothing is.
   */
  static Map<String, String> topicChoiceProblems(Map<String, String> props) {
    String list = props.getOrDefault(ShareSinkConfig.TOPICS_CONFIG, "").trim();
    String regex = props.getOrDefault(ShareSinkConfig.TOPICS_REGEX_CONFIG, "").trim();
    String dlq = props.getOrDefault(SinkDriverConfig.DLQ_TOPIC_CONFIG, "").trim();
    Map<String, String> problems = new LinkedHashMap<>();
    if (!list.isEmpty() && !regex.isEmpty()) {
      problems.put(
          ShareSinkConfig.TOPICS_REGEX_CONFIG,
          ShareSinkConfig.TOPICS_CONFIG
              + " and "
              + ShareSinkConfig.TOPICS_REGEX_CONFIG
              + " are mutually exclusive: set one");
    } else if (list.isEmpty() && regex.isEmpty()) {
      problems.put(
          ShareSinkConfig.TOPICS_CONFIG,
          "set " + ShareSinkConfig.TOPICS_CONFIG + " or " + ShareSinkConfig.TOPICS_REGEX_CONFIG);
    } else if (!dlq.isEmpty()) {
      if (!list.isEmpty()
          && Arrays.stream(list.split(",")).map(String::trim).anyMatch(dlq::equals)) {
        problems.put(
            ShareSinkConfig.TOPICS_CONFIG,
            "the DLQ topic '" + dlq + "' may not be one of the topics consumed");
      } else if (!regex.isEmpty() && matchesQuietly(regex, dlq)) {
        problems.put(
            ShareSinkConfig.TOPICS_REGEX_CONFIG,
            "the DLQ topic '" + dlq + "' may not be matched by the pattern of the topics consumed");
      }
    }
    return problems;
  }

  private static boolean matchesQuietly(String regex, String topic) {
    try {
      return Pattern.compile(regex).matcher(topic).matches();
    } catch (PatternSyntaxException e) {
      return false; // reported by the key's own validator
    }
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

  /** A list of names, possibly empty (then topics.regex names the topics), without blanks. */
  static final class TopicNamesValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value instanceof List<?> list
          && list.stream().anyMatch(v -> v == null || v.toString().isBlank())) {
        throw new ConfigException(name, value, "must be a list of names without empty entries");
      }
    }

    @Override
    public String toString() {
      return "list of topic names";
    }
  }

  /** Unset, or a Java regular expression that compiles. */
  static final class RegexValidator implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value == null || value.toString().isBlank()) {
        return;
      }
      try {
        Pattern.compile(value.toString());
      } catch (PatternSyntaxException e) {
        throw new ConfigException(
            name, value, "is not a valid regular expression: " + e.getDescription());
      }
    }

    @Override
    public String toString() {
      return "a Java regular expression";
    }
  }

  /** A setting that no longer exists: any value is refused with what replaced it. */
  static final class RemovedSetting implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value != null) {
        throw new ConfigException(
            name
                + " was removed: sharesink reads the worker's configuration from the worker"
                + " process only (its REST extension, or the file on its command line); remove"
                + " the key");
      }
    }

    @Override
    public String toString() {
      return "unset (removed)";
    }
  }

  /** Unset, or a non-blank string. */
  static final class OptionalNonEmptyString implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value != null && value.toString().isBlank()) {
        throw new ConfigException(name, value, "must not be empty (leave it unset instead)");
      }
    }

    @Override
    public String toString() {
      return "unset, or a non-empty string";
    }
  }

  /** Unset, or an integer of at least {@code min}. */
  static final class OptionalAtLeast implements ConfigDef.Validator {
    private final int min;
    private final String unset;

    OptionalAtLeast(int min) {
      this(min, "the broker's default");
    }

    /** {@code unset}: what an unset value means, for the configuration reference. */
    OptionalAtLeast(int min, String unset) {
      this.min = min;
      this.unset = unset;
    }

    @Override
    public void ensureValid(String name, Object value) {
      if (value != null && ((Number) value).longValue() < min) {
        throw new ConfigException(name, value, "must be at least " + min);
      }
    }

    @Override
    public String toString() {
      return "unset (" + unset + "), or at least " + min;
    }
  }

  /** Unset, or one of {@code allowed}, ignoring case. */
  static final class OptionalCaseInsensitive implements ConfigDef.Validator {
    private final List<String> allowed;

    OptionalCaseInsensitive(List<String> allowed) {
      this.allowed = List.copyOf(allowed);
    }

    @Override
    public void ensureValid(String name, Object value) {
      if (value == null) {
        return;
      }
      String text = value.toString().trim();
      if (allowed.stream().noneMatch(a -> a.equalsIgnoreCase(text))) {
        throw new ConfigException(name, value, "must be one of " + allowed);
      }
    }

    @Override
    public String toString() {
      return "unset, or one of " + allowed;
    }
  }

  /** The broker's accepted forms of share.auto.offset.reset. */
  static final class AutoOffsetResetValidator implements ConfigDef.Validator {
    static final String BY_DURATION = "by_duration:";

    @Override
    public void ensureValid(String name, Object value) {
      String text = value == null ? "" : value.toString().trim().toLowerCase(Locale.ROOT);
      if (text.equals("earliest") || text.equals("latest")) {
        return;
      }
      if (text.startsWith(BY_DURATION)) {
        String duration = value.toString().trim().substring(BY_DURATION.length());
        try {
          if (!Duration.parse(duration).isNegative()) {
            return;
          }
        } catch (DateTimeParseException e) {
          // fall through to the error
        }
        throw new ConfigException(
            name, value, "'" + duration + "' is not a non-negative ISO-8601 duration (e.g. PT1H)");
      }
      throw new ConfigException(
          name, value, "must be earliest, latest or by_duration:<ISO-8601 duration>");
    }

    @Override
    public String toString() {
      return "earliest, latest, by_duration:<ISO-8601 duration>";
    }
  }
}
