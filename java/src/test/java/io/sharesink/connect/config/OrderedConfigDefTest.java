package io.sharesink.connect.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.Width;
import org.junit.jupiter.api.Test;

class OrderedConfigDefTest {

  private static OrderedConfigDef define(OrderedConfigDef def, String name, String section) {
    return def.define(name, Type.STRING, "", Importance.LOW, name, section, Width.SHORT, name);
  }

  private static int order(ConfigDef def, String name) {
    return def.configKeys().get(name).orderInGroup;
  }

  @Test
  void keysAreNumberedInTheOrderTheirSectionGetsThem() {
    OrderedConfigDef def = new OrderedConfigDef();
    define(def, "a1", "A");
    define(def, "b1", "B");
    define(def, "a2", "A");
    ConfigDef built = def.configDef();
    assertEquals(1, order(built, "a1"));
    assertEquals(2, order(built, "a2"));
    assertEquals(1, order(built, "b1"));
    assertEquals(List.of("A", "B"), built.groups(), "sections in the order they first appear");
  }

  @Test
  void includedKeysTakeTheirPlaceWhereTheyAreIncluded() {
    // The other definer numbered its key first in the shared section; here it comes third.
    OrderedConfigDef other = new OrderedConfigDef();
    other
        .define(
            "x.validated",
            Type.INT,
            7,
            ConfigDef.Range.atLeast(1),
            Importance.HIGH,
            "doc",
            "A",
            Width.SHORT,
            "X")
        .define("y", Type.STRING, "", Importance.LOW, "y", "C", Width.SHORT, "Y");
    OrderedConfigDef def = new OrderedConfigDef();
    define(def, "a1", "A");
    define(def, "a2", "A");
    def.include(other.configDef(), "x.validated");
    ConfigDef built = def.configDef();
    ConfigDef.ConfigKey included = built.configKeys().get("x.validated");
    assertEquals(3, included.orderInGroup);
    assertEquals(1, other.configDef().configKeys().get("x.validated").orderInGroup);
    assertEquals(7, included.defaultValue, "everything else as the other definer has it");
    assertEquals("A", included.group);
    assertThrows(
        org.apache.kafka.common.config.ConfigException.class,
        () -> built.parse(java.util.Map.of("x.validated", "0")),
        "its validator came along");
    assertEquals(null, built.configKeys().get("y"), "only the keys named");
  }

  @Test
  void includingAKeyTheOtherDoesNotDefineFails() {
    OrderedConfigDef def = new OrderedConfigDef();
    assertThrows(IllegalArgumentException.class, () -> def.include(new ConfigDef(), "no.such.key"));
  }
}
