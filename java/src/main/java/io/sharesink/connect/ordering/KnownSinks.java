package io.sharesink.connect.ordering;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The sinks sharesink knows to go wrong in share mode, as data: one row per sink, rendered into
 * docs/configuration.md ({@link OrderingReference}, checked by a unit test) and read by {@link
 * ShareOrdering} at validation and connector start. A share group hands the records of one
 * partition to many tasks at once, so the versions of one key reach the sink in no fixed order; a
 * sink whose writes keep "the last one to arrive" then keeps an older version, with nothing
 * failing. To add a sink, add a row: its connector classes, and either the settings that make it
 * order-sensitive or why it can never run on a share group.
 */
public final class KnownSinks {

  private KnownSinks() {}

  /** What share mode does to a sink of the table. */
  public enum Kind {
    /**
     * Correct only when each key's records are written in offset order, under the settings of its
     * {@link Sink#triggers}: refused at validation unless the operator chose with {@value
     * io.sharesink.connect.ShareSinkConfig#ORDERING_CONFIG}.
     */
    ORDER_SENSITIVE,
    /**
     * Commits its own offsets outside {@code preCommit}: sharesink's commit rule can never make it
     * safe, so it is refused whatever {@value io.sharesink.connect.ShareSinkConfig#ORDERING_CONFIG}
     * says.
     */
    SELF_COMMITTING
  }

  /**
   * A setting of the sink that makes its writes depend on order: {@code key} set to one of {@code
   * values} (ignoring case and surrounding blanks).
   *
   * @param effect what goes wrong when the records arrive out of order, as a clause following the
   *     sink's name and the setting ("writes ...")
   * @param guardable whether a write guard on each record's partition and offset ({@value
   *     ShareOrdering#OFFSET_GUARDED}) can keep the newest version: not for hard deletes, which
   *     remove the row that carried the offset
   */
  public record Trigger(String key, List<String> values, String effect, boolean guardable) {

    /** Whether {@code value} (the connector's setting, or null) is one of {@link #values}. */
    public boolean matches(String value) {
      if (value == null) {
        return false;
      }
      String v = value.trim().toLowerCase(Locale.ROOT);
      return values.stream().anyMatch(x -> x.equalsIgnoreCase(v));
    }
  }

  /**
   * One sink of the table.
   *
   * @param name how the sink is called in messages and the docs
   * @param classes its connector classes (fully qualified; a subclass matches too)
   * @param triggers for {@link Kind#ORDER_SENSITIVE}: the settings that make it so
   * @param why for {@link Kind#SELF_COMMITTING}: why it cannot run on a share group, a clause
   *     following the sink's name ("commits ...")
   */
  public record Sink(
      String name, List<String> classes, Kind kind, List<Trigger> triggers, String why) {}

  private static final String UPSERT_EFFECT =
      "writes whichever version of a key reaches it last, so a row can end on an older version";
  private static final String DELETE_EFFECT =
      "deletes the row of a tombstone's key, and an older version of the key that reaches it later"
          + " writes the row back";

  /** The table. */
  public static final List<Sink> SINKS =
      List.of(
          new Sink(
              "Debezium JDBC sink",
              List.of("io.debezium.connector.jdbc.JdbcSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger("insert.mode", List.of("upsert", "update"), UPSERT_EFFECT, true),
                  new Trigger("delete.enabled", List.of("true"), DELETE_EFFECT, false),
                  new Trigger(
                      "truncate.enabled",
                      List.of("true"),
                      "empties the table on a truncate event, and rows written before it that reach"
                          + " it later stay",
                      false)),
              null),
          new Sink(
              "Confluent JDBC sink",
              List.of("io.confluent.connect.jdbc.JdbcSinkConnector"),
              Kind.ORDER_SENSITIVE,
              List.of(
                  new Trigger("insert.mode", List.of("upsert", "update"), UPSERT_EFFECT, true),
                  new Trigger("delete.enabled", List.of("true"), DELETE_EFFECT, false)),
              null),
          new Sink(
              "Apache Iceberg sink",
              List.of(
                  "org.apache.iceberg.connect.IcebergSinkConnector",
                  "io.tabular.iceberg.connect.IcebergSinkConnector"),
              Kind.SELF_COMMITTING,
              List.of(),
              "commits its own offsets: its preCommit returns {} and its coordinator commits the"
                  + " data files together with the consumer offsets through its control topic."
                  + " sharesink ACCEPTs a record only once preCommit reports it written, so with"
                  + " share.commit.empty.precommit=hold the task stalls once the record-lock"
                  + " window is full, and with accept a crash loses what it had not committed"));

  /** The sink of the table {@code connectorClass} or one of its superclasses is, if any. */
  public static Optional<Sink> of(Class<?> connectorClass) {
    for (Class<?> c = connectorClass; c != null && c != Object.class; c = c.getSuperclass()) {
      Optional<Sink> sink = of(c.getName());
      if (sink.isPresent()) {
        return sink;
      }
    }
    return Optional.empty();
  }

  /** The sink of the table with the fully qualified class name {@code className}, if any. */
  public static Optional<Sink> of(String className) {
    if (className == null) {
      return Optional.empty();
    }
    String name = className.trim();
    return SINKS.stream().filter(s -> s.classes().contains(name)).findFirst();
  }
}
