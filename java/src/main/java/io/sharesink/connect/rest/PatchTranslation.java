package io.sharesink.connect.rest;

import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import io.sharesink.connect.ShareModeForm.InvalidForm;
import io.sharesink.connect.ShareSinkConfig;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code PATCH /connectors/{c}/config} in share mode, kept Connect's own PATCH: the leader applies
 * it to what it stores, so the extension never writes back a value it read (a DELETE before the
 * leader's read answers 404). Connect's PATCH itself reads on the herder thread, validates off it
 * and writes in a later herder request (Kafka 4.4's {@code DistributedHerder}), so a DELETE or PUT
 * written within that validation is undone by it, with or without sharesink.
 *
 * <p>Every key but the switch's ({@link #isSwitchKey}) means the same in the operator's and in the
 * stored form, so a patch of those alone is sent on unchanged, unread. A patch that touches the
 * switch is applied to the operator's form of the current configuration, and only the switch's keys
 * that then differ from what is stored are added to it (set, or null to remove): the patch the
 * leader applies is in the stored form's keys.
 */
final class PatchTranslation {

  static final String INTERNAL_PREFIX = "share.internal.";

  private PatchTranslation() {}

  /** The keys that differ between the operator's and the stored form. */
  static boolean isSwitchKey(String key) {
    return key.equals("connector.class")
        || key.equals(ShareModeForm.FLAG_CONFIG)
        || key.equals(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG)
        || key.startsWith(INTERNAL_PREFIX);
  }

  static boolean touchesSwitch(Map<String, String> patch) {
    return patch.keySet().stream().anyMatch(PatchTranslation::isSwitchKey);
  }

  /**
   * Whether the patch carries sharesink's bookkeeping: one translated already (by the follower that
   * forwarded it to the leader; every translation into or within the stored form carries {@value
   * ShareSinkConfig#FORM_CONFIG}, and one out of it removes it).
   */
  static boolean isTranslated(Map<String, String> patch) {
    return patch.keySet().stream().anyMatch(k -> k.startsWith(INTERNAL_PREFIX));
  }

  /**
   * The patch to send on for {@code patch} written in the operator's form, given the stored {@code
   * current} configuration.
   *
   * @throws InvalidForm when the patched configuration cannot be stored (as for a PUT of it)
   */
  static Map<String, String> translate(
      Map<String, String> current,
      Map<String, String> patch,
      boolean workerDefaultShare,
      ClassResolver classes) {
    Map<String, String> target =
        ShareModeForm.toStored(
            ShareModeForm.patched(ShareModeForm.toOperator(current), patch),
            workerDefaultShare,
            classes);
    Map<String, String> out = new LinkedHashMap<>();
    patch.forEach(
        (key, value) -> {
          if (!isSwitchKey(key)) {
            out.put(key, value); // the same in both forms: as the operator sent it
          }
        });
    Set<String> switchKeys = new TreeSet<>();
    current.keySet().stream().filter(PatchTranslation::isSwitchKey).forEach(switchKeys::add);
    target.keySet().stream().filter(PatchTranslation::isSwitchKey).forEach(switchKeys::add);
    for (String key : switchKeys) {
      String after = target.get(key);
      if (!Objects.equals(current.get(key), after)) {
        out.put(key, after);
      }
    }
    if (ShareModeForm.isStoredForm(target)) {
      // Marks the patch translated even when the form key itself does not change.
      out.put(ShareSinkConfig.FORM_CONFIG, target.get(ShareSinkConfig.FORM_CONFIG));
    }
    return out;
  }
}
