package io.sharesink.connect.rest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareModeForm.ClassKind;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The patch sent on for an operator's patch of the switch, and its idempotence. */
class PatchTranslationTest {

  static final String SINK = "com.example.Sink";
  static final String OTHER_SINK = "com.example.OtherSink";
  static final ClassResolver CLASSES = name -> ClassKind.SINK;

  static Map<String, String> classic() {
    Map<String, String> config = new LinkedHashMap<>();
    config.put("name", "orders");
    config.put("connector.class", SINK);
    config.put("topics", "orders");
    return config;
  }

  static Map<String, String> share() {
    Map<String, String> operator = classic();
    operator.put(ShareModeForm.FLAG_CONFIG, "share");
    return ShareModeForm.toStored(operator, false, CLASSES);
  }

  @Test
  void onlyTheSwitchsKeysNeedTheCurrentConfig() {
    assertFalse(PatchTranslation.touchesSwitch(Map.of("tasks.max", "3", "topics", "x")));
    assertTrue(PatchTranslation.touchesSwitch(Map.of("connector.class", SINK)));
    assertTrue(PatchTranslation.touchesSwitch(Map.of(ShareModeForm.FLAG_CONFIG, "share")));
    assertTrue(PatchTranslation.touchesSwitch(Map.of("share.sink.connector.class", SINK)));
    assertTrue(PatchTranslation.isTranslated(Map.of("share.internal.form", "flag")));
    assertFalse(PatchTranslation.isTranslated(Map.of("share.commit.interval.ms", "1000")));
  }

  @Test
  void aPatchThatKeepsShareModeCarriesTheMarkOnly() {
    Map<String, String> patch = Map.of(ShareModeForm.FLAG_CONFIG, "share", "tasks.max", "4");
    assertEquals(
        Map.of("tasks.max", "4", "share.internal.form", "flag"),
        PatchTranslation.translate(share(), patch, false, CLASSES));
  }

  @Test
  void aClassicResultTranslatedAgainOnTheLeaderIsTheSame() {
    // Without share.internal.* the leader translates a forwarded patch again: same result.
    Map<String, String> once =
        PatchTranslation.translate(
            classic(), Map.of("connector.class", OTHER_SINK), false, CLASSES);
    assertEquals(Map.of("connector.class", OTHER_SINK), once);
    assertEquals(once, PatchTranslation.translate(classic(), once, false, CLASSES));
  }

  @Test
  void movingBackRemovesSharesinksKeys() {
    Map<String, String> patch = new HashMap<>();
    patch.put(ShareModeForm.FLAG_CONFIG, null);
    Map<String, String> out = PatchTranslation.translate(share(), patch, false, CLASSES);
    Map<String, String> expected = new HashMap<>();
    expected.put("connector.class", SINK);
    expected.put("share.sink.connector.class", null);
    expected.put("share.internal.form", null);
    expected.put("share.internal.form.flag", null);
    assertEquals(expected, out);
    assertEquals(classic(), new LinkedHashMap<>(ShareModeForm.patched(share(), out)));
  }
}
