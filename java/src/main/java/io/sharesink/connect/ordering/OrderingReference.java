package io.sharesink.connect.ordering;

import static io.sharesink.connect.GeneratedRegion.cell;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_CONFIG;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_OFFSET_GUARDED;
import static io.sharesink.connect.ShareSinkConfig.ORDERING_UNORDERED;

import io.sharesink.connect.GeneratedRegion;
import io.sharesink.connect.ordering.KnownSinks.Kind;
import io.sharesink.connect.ordering.KnownSinks.Sink;
import io.sharesink.connect.ordering.KnownSinks.Trigger;
import java.io.IOException;
import java.nio.file.Path;
import java.util.stream.Collectors;

/**
 * The table of {@link KnownSinks} as Markdown, and its generated region in {@code
 * docs/configuration.md} (between {@link #BEGIN} and {@link #END}); a unit test regenerates it and
 * compares, so the documented list and the one validation uses cannot drift apart.
 */
public final class OrderingReference {

  static final String BEGIN =
      "<!-- BEGIN GENERATED: KnownSinks (OrderingReference.main); do not edit -->";
  static final String END = "<!-- END GENERATED: KnownSinks -->";
  static final GeneratedRegion REGION = new GeneratedRegion(BEGIN, END);

  private OrderingReference() {}

  /**
   * One row per setting that makes a sink of {@link KnownSinks#SINKS} order-sensitive, and one per
   * sink that cannot run at all.
   */
  public static String markdown() {
    StringBuilder out = new StringBuilder();
    out.append("| Sink | Connector classes | Setting | What goes wrong in share mode | Runs with `")
        .append(ORDERING_CONFIG)
        .append("` | The target's own guard |\n");
    out.append("|---|---|---|---|---|---|\n");
    for (Sink sink : KnownSinks.SINKS) {
      String classes =
          sink.classes().stream().map(c -> "`" + c + "`").collect(Collectors.joining("<br>"));
      String guard = sink.guard() == null ? "none" : cell(sink.guard());
      if (sink.kind() == Kind.SAFE) {
        out.append("| ")
            .append(sink.name())
            .append(" | ")
            .append(classes)
            .append(" | (any) | nothing: it ")
            .append(cell(sink.why()))
            .append(" | as it is (not checked) | ")
            .append(guard)
            .append(" |\n");
        continue;
      }
      if (sink.kind() == Kind.SELF_COMMITTING) {
        String setting =
            sink.triggers().isEmpty()
                ? "(any)"
                : sink.triggers().stream()
                    .map(OrderingReference::setting)
                    .collect(Collectors.joining("<br>"));
        out.append("| ")
            .append(sink.name())
            .append(" | ")
            .append(classes)
            .append(" | ")
            .append(setting)
            .append(" | it ")
            .append(cell(sink.why()))
            .append(" | never: cannot run in share mode")
            .append(sink.triggers().isEmpty() ? "" : " with this setting")
            .append(" | ")
            .append(guard)
            .append(" |\n");
        continue;
      }
      boolean first = true;
      for (Trigger t : sink.triggers()) {
        out.append("| ")
            .append(first ? sink.name() : "")
            .append(" | ")
            .append(first ? classes : "")
            .append(" | ")
            .append(setting(t))
            .append(" | it ")
            .append(cell(t.effect()))
            .append(" | `")
            .append(ORDERING_UNORDERED)
            .append("`")
            .append(t.guardable() ? ", `" + ORDERING_OFFSET_GUARDED + "`" : "")
            .append(" | ")
            .append(first ? guard : "")
            .append(" |\n");
        first = false;
      }
    }
    return out.toString();
  }

  private static String setting(Trigger t) {
    if (t.always()) {
      return "(any)";
    }
    if (t.pattern() != null) {
      return "`" + t.key() + "` matching `" + cell(t.pattern()) + "`";
    }
    boolean defaultSetsItOff = t.sinkDefault() != null && t.matches(null);
    return "`"
        + t.key()
        + "` = "
        + t.values().stream().map(v -> "`" + v + "`").collect(Collectors.joining(", "))
        + (defaultSetsItOff ? " (the sink's default: unset counts)" : "");
  }

  /** Rewrites the generated region of the file at {@code path}. */
  static void update(Path path) throws IOException {
    REGION.update(path, markdown());
  }

  /** Prints the table (what docs/configuration.md holds between its KnownSinks markers). */
  public static void main(String[] args) {
    System.out.print(markdown());
  }
}
