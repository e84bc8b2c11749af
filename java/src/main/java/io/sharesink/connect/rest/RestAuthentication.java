package io.sharesink.connect.rest;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Whether a worker's REST API authenticates anyone, as far as the worker configuration the REST
 * extension is handed can tell. In a properties file the last {@code rest.extension.classes} line
 * wins, so an install that adds a line of its own instead of appending to the list silently drops
 * the authentication extension listed before it: this is what catches that.
 *
 * <p>What it can see: the other REST extensions (any one of them may authenticate: it cannot tell
 * which, so any other extension counts as authentication) and the listeners, where an {@code https}
 * listener with {@code ssl.client.authentication=required} (or {@code
 * listeners.https.ssl.client.authentication=required}) authenticates every caller by certificate.
 * What it cannot see: a proxy or a network policy in front of the worker, and whatever the worker
 * runs outside its configuration (a servlet filter added to the JVM, a JAAS login on a listener
 * configured elsewhere).
 */
final class RestAuthentication {

  static final String EXTENSIONS = "rest.extension.classes";
  static final String LISTENERS = "listeners";
  static final String CLIENT_AUTH = "ssl.client.authentication";
  static final String HTTPS_CLIENT_AUTH = "listeners.https." + CLIENT_AUTH;

  private RestAuthentication() {}

  /**
   * The WARN to log when sharesink's extension is the only one and no listener requires a client
   * certificate; empty when something may authenticate callers.
   */
  static Optional<String> warning(Map<String, ?> workerConfig, String ownClass) {
    List<String> extensions = list(workerConfig.get(EXTENSIONS));
    List<String> others = new ArrayList<>(extensions);
    others.removeIf(ownClass::equals);
    if (!others.isEmpty() || clientCertificateRequired(workerConfig)) {
      return Optional.empty();
    }
    Object listeners = workerConfig.get(LISTENERS);
    return Optional.of(
        "sharesink's REST extension is the only one in "
            + EXTENSIONS
            + " and no REST listener requires a client certificate (listeners="
            + (listeners == null
                ? "http://:8083 (Connect's default)"
                : String.join(",", list(listeners)))
            + "): Connect sees no authentication on this worker's REST API. If the worker had an"
            + " authentication extension before, a later "
            + EXTENSIONS
            + " line replaced it: list both on one line, "
            + EXTENSIONS
            + "=<the authentication extension>,"
            + ownClass
            + ". If a proxy in front of the worker authenticates, ignore this.");
  }

  private static boolean clientCertificateRequired(Map<String, ?> workerConfig) {
    boolean https =
        list(workerConfig.get(LISTENERS)).stream()
            .anyMatch(l -> l.toLowerCase(Locale.ROOT).startsWith("https:"));
    if (!https) {
      return false;
    }
    Object auth = workerConfig.get(HTTPS_CLIENT_AUTH);
    if (auth == null) {
      auth = workerConfig.get(CLIENT_AUTH);
    }
    return auth != null && "required".equalsIgnoreCase(auth.toString().trim());
  }

  /** A list setting as Connect takes it: a List, or a comma-separated String. */
  private static List<String> list(Object value) {
    List<String> out = new ArrayList<>();
    if (value instanceof Collection<?> c) {
      c.forEach(v -> add(out, String.valueOf(v)));
    } else if (value != null) {
      for (String part : value.toString().split(",")) {
        add(out, part);
      }
    }
    return out;
  }

  private static void add(List<String> out, String item) {
    String trimmed = item.trim();
    if (!trimmed.isEmpty()) {
      out.add(trimmed);
    }
  }
}
