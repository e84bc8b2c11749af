package io.sharesink.connect;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.ConfigKey;
import org.apache.kafka.common.config.types.Password;

/**
 * The configuration reference as Markdown, generated from a {@link ConfigDef}, and the generated
 * region of {@code docs/configuration.md} (between {@link #BEGIN} and {@link #END}); a unit test
 * regenerates it and compares, so the document cannot go stale. Prose outside the markers is
 * written by hand.
 */
final class ConfigReference {

  static final String BEGIN = "<!-- BEGIN GENERATED: ShareSinkConfig.main; do not edit -->";
  static final String END = "<!-- END GENERATED -->";
  static final GeneratedRegion REGION = new GeneratedRegion(BEGIN, END);

  private ConfigReference() {}

  /** One section per group, in group order; one table row per key, in key order. */
  static String markdown(ConfigDef def) {
    Map<String, List<ConfigKey>> byGroup = new LinkedHashMap<>();
    for (String group : def.groups()) {
      byGroup.put(group, new ArrayList<>());
    }
    for (ConfigKey key : def.configKeys().values()) {
      if (!key.internalConfig) {
        byGroup.computeIfAbsent(key.group, g -> new ArrayList<>()).add(key);
      }
    }
    StringBuilder out = new StringBuilder();
    byGroup.forEach(
        (group, keys) -> {
          if (keys.isEmpty()) {
            return;
          }
          keys.sort((a, b) -> Integer.compare(a.orderInGroup, b.orderInGroup));
          out.append("### ").append(group).append("\n\n");
          out.append("| Key | Type | Default | Valid values | Importance | Description |\n");
          out.append("|---|---|---|---|---|---|\n");
          for (ConfigKey key : keys) {
            out.append("| `")
                .append(key.name)
                .append("` | ")
                .append(key.type.name().toLowerCase())
                .append(" | ")
                .append(defaultText(key))
                .append(" | ")
                .append(GeneratedRegion.cell(key.validator == null ? "" : key.validator.toString()))
                .append(" | ")
                .append(key.importance.name().toLowerCase())
                .append(" | ")
                .append(GeneratedRegion.cell(key.documentation))
                .append(" |\n");
          }
          out.append("\n");
        });
    return out.toString();
  }

  private static String defaultText(ConfigKey key) {
    if (!key.hasDefault()) {
      return "(required)";
    }
    Object value = key.defaultValue;
    if (value == null) {
      return "(unset)";
    }
    if (value instanceof Password) {
      return "(hidden)";
    }
    if (value instanceof List<?> list) {
      value = String.join(",", list.stream().map(String::valueOf).toList());
    }
    String text = value.toString();
    return text.isEmpty() ? "\"\"" : "`" + text + "`";
  }

  /** Rewrites the generated region of the file at {@code path} (for {@code mvn exec} or tests). */
  static void update(Path path) throws IOException {
    REGION.update(path, markdown(ShareSinkConfig.CONFIG_DEF));
  }
}
