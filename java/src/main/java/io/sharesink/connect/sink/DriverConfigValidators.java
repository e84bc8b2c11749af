package io.sharesink.connect.sink;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/** The validators of {@link SinkDriverConfig}'s keys. */
final class DriverConfigValidators {

  private DriverConfigValidators() {}

  /** Empty (no header), or a header name a sink or SMT can match as written. */
  static final class HeaderName implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      // ConfigDef has already trimmed it.
      String text = value == null ? "" : value.toString();
      if (text.chars().anyMatch(Character::isISOControl)) {
        throw new ConfigException(name, value, "a header name has no control characters");
      }
    }

    @Override
    public String toString() {
      return "empty (no header), or a header name";
    }
  }

  /** A topic's replication factor as Connect takes it: -1 (the broker's default) or at least 1. */
  static final class ReplicationFactor implements ConfigDef.Validator {
    @Override
    public void ensureValid(String name, Object value) {
      if (value != null && (Short) value != -1 && (Short) value < 1) {
        throw new ConfigException(name, value, "must be -1 (the broker's default) or at least 1");
      }
    }

    @Override
    public String toString() {
      return "-1 (the broker's default), or at least 1";
    }
  }
}
