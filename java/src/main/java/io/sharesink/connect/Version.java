package io.sharesink.connect;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * The plugin's version, read from {@code sharesink-version.properties} (filtered by Maven with the
 * project version). Connect compares plugin versions as Maven versions (KIP-891), so this must be
 * the artifact version, never Kafka's.
 */
public final class Version {

  /** Returned when the properties file is missing, e.g. when run from an unfiltered source tree. */
  public static final String UNKNOWN = "unknown";

  private static final String RESOURCE = "/sharesink-version.properties";
  private static final String VERSION = readVersion();

  private Version() {}

  public static String get() {
    return VERSION;
  }

  private static String readVersion() {
    try (InputStream in = Version.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        return UNKNOWN;
      }
      Properties properties = new Properties();
      properties.load(in);
      String version = properties.getProperty("version", "").trim();
      // An unfiltered file still holds the ${...} placeholder.
      return version.isEmpty() || version.startsWith("${") ? UNKNOWN : version;
    } catch (IOException | RuntimeException e) {
      // Never fail class initialisation: the worker calls version() while scanning plugins.
      return UNKNOWN;
    }
  }
}
