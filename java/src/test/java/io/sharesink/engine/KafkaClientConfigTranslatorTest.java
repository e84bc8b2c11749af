package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.config.types.Password;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KafkaClientConfigTranslatorTest {

  @TempDir Path dir;

  /** Runs the JDK's keytool (the stores are the kind an operator would make). */
  private void keytool(String... args) throws Exception {
    Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
    List<String> command = new java.util.ArrayList<>(List.of(keytool.toString()));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, p.exitValue(), output);
  }

  /** A key store with one key pair, and a truststore holding its certificate. */
  private void makeStores(String type) throws Exception {
    String ext = type.toLowerCase();
    keytool(
        "-genkeypair",
        "-alias",
        "client",
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-dname",
        "CN=sharesink-test",
        "-validity",
        "2",
        "-storetype",
        type,
        "-keystore",
        dir.resolve("client." + ext).toString(),
        "-storepass",
        "store-secret",
        "-keypass",
        "store-secret");
    keytool(
        "-exportcert",
        "-alias",
        "client",
        "-storetype",
        type,
        "-keystore",
        dir.resolve("client." + ext).toString(),
        "-storepass",
        "store-secret",
        "-file",
        dir.resolve("client.cer").toString());
    keytool(
        "-importcert",
        "-noprompt",
        "-alias",
        "ca",
        "-file",
        dir.resolve("client.cer").toString(),
        "-storetype",
        type,
        "-keystore",
        dir.resolve("trust." + ext).toString(),
        "-storepass",
        "trust-secret");
  }

  private static byte[] pemBody(String pem, String label) {
    String body =
        pem.substring(
            pem.indexOf("-----BEGIN " + label + "-----")
                + ("-----BEGIN " + label + "-----").length(),
            pem.indexOf("-----END " + label + "-----"));
    return Base64.getMimeDecoder().decode(body);
  }

  private void convertsStoresOfType(String type) throws Exception {
    makeStores(type);
    String ext = type.toLowerCase();
    Map<String, Object> settings = new HashMap<>();
    settings.put("bootstrap.servers", List.of("a:1", "b:2"));
    settings.put("security.protocol", "SSL");
    settings.put("ssl.truststore.location", dir.resolve("trust." + ext).toString());
    settings.put("ssl.truststore.password", new Password("trust-secret"));
    settings.put("ssl.keystore.location", dir.resolve("client." + ext).toString());
    settings.put("ssl.keystore.password", new Password("store-secret"));
    if (type.equals("PKCS12")) {
      settings.put("ssl.truststore.type", "PKCS12");
      settings.put("ssl.keystore.type", "PKCS12");
    } // JKS: Kafka's default type, left unset on purpose

    Map<String, String> props = KafkaClientConfigTranslator.translate(settings);
    assertEquals("a:1,b:2", props.get("bootstrap.servers"));
    assertEquals("PEM", props.get("ssl.truststore.type"));
    assertEquals("PEM", props.get("ssl.keystore.type"));
    for (String gone :
        List.of(
            "ssl.truststore.location",
            "ssl.truststore.password",
            "ssl.keystore.location",
            "ssl.keystore.password",
            "ssl.key.password")) {
      assertFalse(props.containsKey(gone), gone);
    }
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    X509Certificate trusted =
        (X509Certificate)
            x509.generateCertificate(
                new ByteArrayInputStream(
                    pemBody(props.get("ssl.truststore.certificates"), "CERTIFICATE")));
    assertEquals("CN=sharesink-test", trusted.getSubjectX500Principal().getName());
    X509Certificate chain =
        (X509Certificate)
            x509.generateCertificate(
                new ByteArrayInputStream(
                    pemBody(props.get("ssl.keystore.certificate.chain"), "CERTIFICATE")));
    assertEquals(trusted, chain);
    // The key is plain PKCS#8 and belongs to the certificate.
    var key =
        KeyFactory.getInstance("RSA")
            .generatePrivate(
                new PKCS8EncodedKeySpec(pemBody(props.get("ssl.keystore.key"), "PRIVATE KEY")));
    assertEquals(
        ((java.security.interfaces.RSAPublicKey) chain.getPublicKey()).getModulus(),
        ((java.security.interfaces.RSAPrivateCrtKey) key).getModulus());
  }

  @Test
  void engineSettingsPassThroughAsText() {
    Map<String, Object> settings = new HashMap<>();
    settings.put("bootstrap.servers", "b:9092");
    settings.put("share.buffer.hold.max.ms", 900_000L);
    settings.put("share.buffer.max.records", 2000);
    Map<String, String> out = KafkaClientConfigTranslator.translate(settings);
    assertEquals("900000", out.get("share.buffer.hold.max.ms"));
    assertEquals("2000", out.get("share.buffer.max.records"));
  }

  @Test
  void jksStoresBecomePem() throws Exception {
    convertsStoresOfType("JKS");
  }

  @Test
  void pkcs12StoresBecomePem() throws Exception {
    convertsStoresOfType("PKCS12");
  }

  @Test
  void pemSettingsAndOtherValuesPassThrough() {
    Map<String, Object> settings = new HashMap<>();
    settings.put("ssl.truststore.type", "PEM");
    settings.put("ssl.truststore.certificates", "-----BEGIN CERTIFICATE-----...");
    settings.put("sasl.jaas.config", new Password("x required username=\"u\" password=\"p\";"));
    settings.put("max.poll.records", 100);
    settings.put("client.id", null);
    Map<String, String> props = KafkaClientConfigTranslator.translate(settings);
    assertEquals("-----BEGIN CERTIFICATE-----...", props.get("ssl.truststore.certificates"));
    assertEquals("x required username=\"u\" password=\"p\";", props.get("sasl.jaas.config"));
    assertEquals("100", props.get("max.poll.records"));
    assertFalse(props.containsKey("client.id"));
  }

  @Test
  void anUnreadableStoreIsAConfigError() throws Exception {
    Map<String, Object> settings = new HashMap<>();
    settings.put("ssl.truststore.location", dir.resolve("missing.jks").toString());
    EngineException e =
        assertThrows(EngineException.class, () -> KafkaClientConfigTranslator.translate(settings));
    assertEquals(EngineException.Kind.CONFIG, e.kind());
    assertTrue(e.getMessage().contains("ssl.truststore.location"), e.getMessage());
  }
}
