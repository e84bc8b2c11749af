package io.sharesink.connect.rest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RestAuthenticationTest {

  private static final String OURS = ShareModeRestExtension.class.getName();
  private static final String BASIC =
      "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension";

  @Test
  void oursAloneOnPlainHttpIsWarnedAboutNamingTheFix() {
    Optional<String> w =
        RestAuthentication.warning(
            Map.of("rest.extension.classes", OURS, "listeners", "http://127.0.0.1:8083"), OURS);
    assertTrue(w.isPresent());
    assertTrue(w.get().contains("listeners=http://127.0.0.1:8083"), w.get());
    assertTrue(
        w.get().contains("rest.extension.classes=<the authentication extension>," + OURS), w.get());
    assertTrue(
        RestAuthentication.warning(Map.of("rest.extension.classes", " " + OURS + " "), OURS)
            .get()
            .contains("Connect's default"));
  }

  @Test
  void anotherExtensionBesideOursIsTakenForAuthentication() {
    assertEquals(
        Optional.empty(),
        RestAuthentication.warning(Map.of("rest.extension.classes", BASIC + ", " + OURS), OURS));
    assertEquals(
        Optional.empty(),
        RestAuthentication.warning(Map.of("rest.extension.classes", List.of(OURS, BASIC)), OURS));
  }

  @Test
  void anHttpsListenerRequiringClientCertificatesAuthenticates() {
    assertEquals(
        Optional.empty(),
        RestAuthentication.warning(
            Map.of(
                "rest.extension.classes", OURS,
                "listeners", "https://0.0.0.0:8443",
                "ssl.client.authentication", "required"),
            OURS));
    assertEquals(
        Optional.empty(),
        RestAuthentication.warning(
            Map.of(
                "rest.extension.classes", OURS,
                "listeners", "http://:8083,https://:8443",
                "listeners.https.ssl.client.authentication", "REQUIRED"),
            OURS));
    assertTrue(
        RestAuthentication.warning(
                Map.of(
                    "rest.extension.classes", OURS,
                    "listeners", "https://:8443",
                    "ssl.client.authentication", "requested"),
                OURS)
            .isPresent(),
        "requested lets a caller without a certificate in");
    assertTrue(
        RestAuthentication.warning(
                Map.of(
                    "rest.extension.classes", OURS,
                    "listeners", "http://:8083",
                    "ssl.client.authentication", "required"),
                OURS)
            .isPresent(),
        "client authentication on no https listener");
  }
}
