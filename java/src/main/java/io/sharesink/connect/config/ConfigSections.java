package io.sharesink.connect.config;

/**
 * The sections of a share-mode connector's configuration (Connect's config groups), named once for
 * every class that defines keys in them. The reference and Connect's validation show the sections
 * in the order their first key is defined in {@code ShareSinkConfig}.
 */
public final class ConfigSections {

  /** The legacy connector, its topics, what its records carry. */
  public static final String LEGACY_SINK = "Legacy sink";

  /** Whether the sink may see records out of order. */
  public static final String ORDER = "Order";

  /** {@code share.tasks.autoscale*}. */
  public static final String TASK_AUTOSCALING = "Task autoscaling";

  /** The share group: its id, its settings on the broker, its dead-letter queue. */
  public static final String SHARE_GROUP = "Share group";

  /** The share consumer: its settings, its memory, its engine. */
  public static final String SHARE_CONSUMER = "Share consumer";

  /** When the driver commits and acknowledges. */
  public static final String SHARE_COMMIT = "Share commit";

  /** Restarts of a legacy task that failed. */
  public static final String LEGACY_TASK_RESTARTS = "Legacy task restarts";

  /** Connect's {@code errors.*} keys, under the name Connect's own sink configuration uses. */
  public static final String ERROR_HANDLING = "Error Handling";

  private ConfigSections() {}
}
