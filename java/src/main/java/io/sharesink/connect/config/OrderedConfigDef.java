package io.sharesink.connect.config;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.ConfigKey;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Validator;
import org.apache.kafka.common.config.ConfigDef.Width;

/**
 * A {@link ConfigDef} whose keys are ordered within their section as they are defined: each key's
 * {@code orderInGroup} is one more than the last key's of its section. No definer numbers keys by
 * hand, and keys taken from another definition ({@link #include}) take their place where they are
 * included, so a section shared by two definers has one order, this definition's.
 */
public final class OrderedConfigDef {

  private final ConfigDef def = new ConfigDef();
  private final Map<String, Integer> lastOrder = new HashMap<>();

  public OrderedConfigDef define(
      String name,
      Type type,
      Object defaultValue,
      Validator validator,
      Importance importance,
      String documentation,
      String section,
      Width width,
      String displayName) {
    def.define(
        name,
        type,
        defaultValue,
        validator,
        importance,
        documentation,
        section,
        next(section),
        width,
        displayName);
    return this;
  }

  /** A key without a validator. */
  public OrderedConfigDef define(
      String name,
      Type type,
      Object defaultValue,
      Importance importance,
      String documentation,
      String section,
      Width width,
      String displayName) {
    return define(
        name, type, defaultValue, null, importance, documentation, section, width, displayName);
  }

  /** The {@code keys} of {@code from}, as it defines them, placed next in their sections here. */
  public OrderedConfigDef include(ConfigDef from, String... keys) {
    for (String name : keys) {
      ConfigKey key = from.configKeys().get(name);
      if (key == null) {
        throw new IllegalArgumentException(name + " is not defined there");
      }
      def.define(
          key.name,
          key.type,
          key.defaultValue,
          key.validator,
          key.importance,
          key.documentation,
          key.group,
          next(key.group),
          key.width,
          key.displayName,
          key.dependents,
          key.recommender);
    }
    return this;
  }

  /** The definition so far. */
  public ConfigDef configDef() {
    return def;
  }

  private int next(String section) {
    return lastOrder.merge(section, 1, Integer::sum);
  }
}
