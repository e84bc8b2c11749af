package io.sharesink.connect.autoscale;

import io.sharesink.connect.config.ConfigSections;
import io.sharesink.connect.config.OrderedConfigDef;
import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Range;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;

/**
 * The autoscaler's keys ({@value #ENABLE_CONFIG} and {@code share.tasks.autoscale.*}), defined in a
 * group of their own, and the settings read from a connector's configuration. The rule itself is
 * {@link AutoscalePolicy}; the thread that feeds it is {@link Autoscaler}.
 */
public final class TaskAutoscale {

  private TaskAutoscale() {}

  public static final String GROUP = ConfigSections.TASK_AUTOSCALING;

  /** The reference's section about autoscaling, named in messages. */
  public static final String DOCS = "docs/configuration.md, \"Autoscaling the tasks\"";

  /** Connect's own key: the autoscaler's maximum. */
  public static final String TASKS_MAX_CONFIG = "tasks.max";

  public static final String ENABLE_CONFIG = "share.tasks.autoscale";
  static final String ENABLE_DOC =
      "Let the connector choose how many tasks run, between share.tasks.autoscale.min and"
          + " tasks.max, from the share group's lag and the topics' end offsets (read every"
          + " share.tasks.autoscale.interval.ms): it adds tasks while a backlog would not drain"
          + " within share.tasks.autoscale.drain.target.ms at the rate the running tasks consume,"
          + " and removes them once fewer would carry the load, after"
          + " share.tasks.autoscale.scale.down.window.ms of asking for fewer; at most one change"
          + " per share.tasks.autoscale.reconfigure.min.interval.ms. Every change is a task"
          + " reconfiguration: Connect restarts all the connector's tasks (see "
          + DOCS
          + " for what one costs). false (default): always tasks.max tasks.";
  static final String ENABLE_DISPLAY = "Autoscale the tasks";

  public static final String MIN_CONFIG = "share.tasks.autoscale.min";
  static final String MIN_DOC =
      "The fewest tasks the autoscaler runs, and what it starts a connector with whose share group"
          + " has no members yet (a connector that restarts while its tasks run keeps their"
          + " number, within the bounds). At most tasks.max; the maximum is tasks.max.";
  static final String MIN_DISPLAY = "Autoscale: fewest tasks";
  public static final int MIN_DEFAULT = 1;

  public static final String INTERVAL_MS_CONFIG = "share.tasks.autoscale.interval.ms";
  static final String INTERVAL_MS_DOC =
      "How often the autoscaler reads the share group's lag (ListShareGroupOffsets) and the end"
          + " offsets of its partitions (ListOffsets): two admin requests per interval. The"
          + " produce rate is measured over the last interval, the consume rate over at least two"
          + " share.commit.interval.ms; a backlog is seen at the first reading after it appears."
          + " After a change, one interval passes before readings count again (the tasks restart"
          + " meanwhile), and a new span is measured before the next decision.";
  static final String INTERVAL_MS_DISPLAY = "Autoscale: sampling interval (ms)";
  public static final long INTERVAL_MS_DEFAULT = 5_000L;

  public static final String RECONFIGURE_MIN_INTERVAL_MS_CONFIG =
      "share.tasks.autoscale.reconfigure.min.interval.ms";

  /**
   * The least {@value #RECONFIGURE_MIN_INTERVAL_MS_CONFIG} a connector may set. Every change is a
   * task reconfiguration, and on a distributed worker that is a rebalance of the whole Connect
   * cluster: every worker rejoins (twice, with incremental cooperative rebalancing), REST requests
   * that need the herder answer 409 meanwhile, and the connector's tasks restart. 60 s is the
   * worker's default {@code rebalance.timeout.ms}, the time Connect allows one rebalance: changes
   * no closer than that cannot keep the cluster rebalancing, whatever one tenant sets. It is also
   * the autoscaler's own horizon (its drain target and scale-down window).
   */
  public static final long RECONFIGURE_MIN_INTERVAL_MS_FLOOR = 60_000L;

  static final String RECONFIGURE_MIN_INTERVAL_MS_DOC =
      "The bound on how often the autoscaler reconfigures: at least this long between two of its"
          + " changes, up or down. A change wanted sooner waits, and is decided again on the"
          + " readings of then. At least 60000 (60 s, the worker's default rebalance.timeout.ms):"
          + " every change rebalances the whole Connect cluster, so one connector must not be"
          + " able to keep it rebalancing. A stored configuration with less (from an older"
          + " release) runs with 60000.";
  static final String RECONFIGURE_MIN_INTERVAL_MS_DISPLAY =
      "Autoscale: least time between changes (ms)";
  public static final long RECONFIGURE_MIN_INTERVAL_MS_DEFAULT = RECONFIGURE_MIN_INTERVAL_MS_FLOOR;

  public static final String SCALE_DOWN_WINDOW_MS_CONFIG =
      "share.tasks.autoscale.scale.down.window.ms";
  static final String SCALE_DOWN_WINDOW_MS_DOC =
      "The hysteresis of removing tasks: fewer tasks only once every reading of this long a"
          + " window asked for fewer, and then the most any of them asked for. A reading with a"
          + " backlog asks for at least the running tasks, so it starts the window again.";
  static final String SCALE_DOWN_WINDOW_MS_DISPLAY = "Autoscale: scale-down window (ms)";
  public static final long SCALE_DOWN_WINDOW_MS_DEFAULT = 60_000L;

  public static final String DRAIN_TARGET_MS_CONFIG = "share.tasks.autoscale.drain.target.ms";
  static final String DRAIN_TARGET_MS_DOC =
      "How soon a backlog should be gone. While one would take longer at the rate the running"
          + " tasks consume (or grows), the autoscaler asks for as many tasks as consume the"
          + " produce rate plus the backlog over this time, at the rate one task was measured to"
          + " consume, up to tasks.max in one step. Shorter: more tasks sooner for a burst;"
          + " longer: fewer task-seconds, slower drains.";
  static final String DRAIN_TARGET_MS_DISPLAY = "Autoscale: drain target (ms)";
  public static final long DRAIN_TARGET_MS_DEFAULT = 60_000L;

  /**
   * The task's share consumer's max.poll.records (for what a task may hold in flight): Kafka's key
   * under {@code ShareSinkConfig.CONSUMER_PREFIX}, which this package cannot import
   * (ShareSinkConfig composes its keys; AutoscalerTest ties the two).
   */
  static final String MAX_POLL_RECORDS_CONFIG =
      "share.consumer." + ConsumerConfig.MAX_POLL_RECORDS_CONFIG;

  /** Defines the autoscaler's keys in {@code def}, in their own group. */
  public static void define(OrderedConfigDef def) {
    def.define(
        ENABLE_CONFIG,
        Type.BOOLEAN,
        false,
        Importance.MEDIUM,
        ENABLE_DOC,
        GROUP,
        Width.SHORT,
        ENABLE_DISPLAY);
    def.define(
        MIN_CONFIG,
        Type.INT,
        MIN_DEFAULT,
        Range.atLeast(1),
        Importance.MEDIUM,
        MIN_DOC,
        GROUP,
        Width.SHORT,
        MIN_DISPLAY);
    def.define(
        INTERVAL_MS_CONFIG,
        Type.LONG,
        INTERVAL_MS_DEFAULT,
        Range.atLeast(1_000L),
        Importance.LOW,
        INTERVAL_MS_DOC,
        GROUP,
        Width.SHORT,
        INTERVAL_MS_DISPLAY);
    def.define(
        RECONFIGURE_MIN_INTERVAL_MS_CONFIG,
        Type.LONG,
        RECONFIGURE_MIN_INTERVAL_MS_DEFAULT,
        Range.atLeast(0L),
        Importance.LOW,
        RECONFIGURE_MIN_INTERVAL_MS_DOC,
        GROUP,
        Width.SHORT,
        RECONFIGURE_MIN_INTERVAL_MS_DISPLAY);
    def.define(
        SCALE_DOWN_WINDOW_MS_CONFIG,
        Type.LONG,
        SCALE_DOWN_WINDOW_MS_DEFAULT,
        Range.atLeast(0L),
        Importance.LOW,
        SCALE_DOWN_WINDOW_MS_DOC,
        GROUP,
        Width.SHORT,
        SCALE_DOWN_WINDOW_MS_DISPLAY);
    def.define(
        DRAIN_TARGET_MS_CONFIG,
        Type.LONG,
        DRAIN_TARGET_MS_DEFAULT,
        Range.atLeast(1_000L),
        Importance.LOW,
        DRAIN_TARGET_MS_DOC,
        GROUP,
        Width.SHORT,
        DRAIN_TARGET_MS_DISPLAY);
  }

  /** Whether {@value #ENABLE_CONFIG} is true in a connector's configuration. */
  public static boolean enabled(Map<String, String> props) {
    String v = props.get(ENABLE_CONFIG);
    return v != null && v.trim().equalsIgnoreCase("true");
  }

  /**
   * What validation reports beyond each key's own validator: a bound between changes below {@link
   * #RECONFIGURE_MIN_INTERVAL_MS_FLOOR}, on {@value #RECONFIGURE_MIN_INTERVAL_MS_CONFIG} (not a
   * range of the key: a stored configuration from before the floor runs with the floor instead of
   * failing, see {@link Settings#of}); a minimum above {@code tasks.max}, on {@value #MIN_CONFIG}.
   * Empty when the autoscaler is off or nothing is wrong.
   */
  public static Map<String, List<String>> problems(Map<String, String> props) {
    Map<String, List<String>> problems = new LinkedHashMap<>();
    if (!enabled(props)) {
      return problems;
    }
    Long bound = longOrNull(props.get(RECONFIGURE_MIN_INTERVAL_MS_CONFIG));
    if (bound != null && bound < RECONFIGURE_MIN_INTERVAL_MS_FLOOR) {
      problems.put(
          RECONFIGURE_MIN_INTERVAL_MS_CONFIG,
          List.of(
              RECONFIGURE_MIN_INTERVAL_MS_CONFIG
                  + "="
                  + bound
                  + " is below "
                  + RECONFIGURE_MIN_INTERVAL_MS_FLOOR
                  + ": every change rebalances the whole Connect cluster, so changes may come at"
                  + " most once per "
                  + RECONFIGURE_MIN_INTERVAL_MS_FLOOR / 1000
                  + " s"));
    }
    Integer min = intOrNull(props.get(MIN_CONFIG));
    Integer max = intOrNull(props.get(TASKS_MAX_CONFIG));
    if (min != null && max != null && min > max) {
      problems.put(
          MIN_CONFIG,
          List.of(
              MIN_CONFIG
                  + "="
                  + min
                  + " is above "
                  + TASKS_MAX_CONFIG
                  + "="
                  + max
                  + ": the autoscaler runs between the two"));
    }
    return problems;
  }

  private static Long longOrNull(String value) {
    if (value == null) {
      return null;
    }
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      return null; // the key's own validator says so
    }
  }

  private static Integer intOrNull(String value) {
    if (value == null) {
      return null;
    }
    try {
      return Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      return null; // the key's own validator says so
    }
  }

  /** The autoscaler's settings, in milliseconds and tasks. */
  public record Settings(
      int minTasks,
      long intervalMs,
      long reconfigureMinIntervalMs,
      long scaleDownWindowMs,
      long drainTargetMs,
      int maxPollRecords,
      long commitIntervalMs) {

    /**
     * The settings of a connector's configuration (parsed by {@code ShareSinkConfig} first); the
     * bound between changes at least {@link #RECONFIGURE_MIN_INTERVAL_MS_FLOOR}.
     */
    public static Settings of(Map<String, String> props) {
      return new Settings(
          Math.max(1, parseInt(props, MIN_CONFIG, MIN_DEFAULT)),
          parseLong(props, INTERVAL_MS_CONFIG, INTERVAL_MS_DEFAULT),
          Math.max(
              RECONFIGURE_MIN_INTERVAL_MS_FLOOR,
              parseLong(
                  props, RECONFIGURE_MIN_INTERVAL_MS_CONFIG, RECONFIGURE_MIN_INTERVAL_MS_DEFAULT)),
          parseLong(props, SCALE_DOWN_WINDOW_MS_CONFIG, SCALE_DOWN_WINDOW_MS_DEFAULT),
          parseLong(props, DRAIN_TARGET_MS_CONFIG, DRAIN_TARGET_MS_DEFAULT),
          Math.max(
              1, parseInt(props, MAX_POLL_RECORDS_CONFIG, ConsumerConfig.DEFAULT_MAX_POLL_RECORDS)),
          parseLong(
              props,
              SinkDriverConfig.COMMIT_INTERVAL_MS_CONFIG,
              SinkDriverConfig.COMMIT_INTERVAL_MS_DEFAULT));
    }

    private static int parseInt(Map<String, String> props, String key, int dflt) {
      Integer v = intOrNull(props.get(key));
      return v == null ? dflt : v;
    }

    private static long parseLong(Map<String, String> props, String key, long dflt) {
      String v = props.get(key);
      if (v == null) {
        return dflt;
      }
      try {
        return Long.parseLong(v.trim());
      } catch (NumberFormatException e) {
        return dflt;
      }
    }
  }
}
