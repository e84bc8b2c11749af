package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md holds the reference generated from the ConfigDef; this test regenerates it
 * and fails when the file is stale. {@code -Dsharesink.docs.update=true} rewrites it instead.
 */
class ConfigReferenceTest {

  private static final Path DOC = Path.of("..", "docs", "configuration.md");

  @Test
  void docsConfigurationMdIsUpToDate() throws Exception {
    if (Boolean.getBoolean("sharesink.docs.update")) {
      ConfigReference.update(DOC);
    }
    String document = Files.readString(DOC, StandardCharsets.UTF_8);
    String expected =
        ConfigReference.REGION.replaceIn(
            document, ConfigReference.markdown(ShareSinkConfig.CONFIG_DEF));
    assertEquals(
        expected,
        document,
        "docs/configuration.md is stale: run `mvn -Dnative.skip test -Dtest=ConfigReferenceTest"
            + " -Dsharesink.docs.update=true` in java/");
  }

  @Test
  void everyShareKeyOfTheDriverIsOneOfTheConnectors() {
    // A key the driver reads but the connector does not define is neither validated nor in the
    // reference (share.task.stuck.timeout.ms was such a key).
    for (String key : SinkDriverConfig.CONFIG_DEF.names()) {
      if (key.startsWith("share.")) {
        assertTrue(ShareSinkConfig.CONFIG_DEF.names().contains(key), key);
      }
    }
  }

  @Test
  void everyKeyIsInTheReference() {
    String markdown = ConfigReference.markdown(ShareSinkConfig.CONFIG_DEF);
    for (String key : ShareSinkConfig.CONFIG_DEF.names()) {
      assertTrue(markdown.contains("| `" + key + "` |"), key);
    }
  }
}
