package io.sharesink.engine;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.common.config.types.Password;

/**
 * Turns Kafka client settings (as a sink connector or the worker would give them) into the string
 * properties the native engine reads ({@code rust/engine/src/config.rs}, {@code security.rs}).
 *
 * <p>Values become strings: {@link Password} its value, lists comma-joined, classes their name.
 * Java key stores become PEM, which the engine reads without a JVM: a JKS or PKCS12 truststore
 * ({@code ssl.truststore.location/type/password}) becomes {@code ssl.truststore.type=PEM} plus
 * {@code ssl.truststore.certificates}; a JKS or PKCS12 keystore becomes {@code
 * ssl.keystore.type=PEM} plus {@code ssl.keystore.certificate.chain} and an unencrypted PKCS#8
 * {@code ssl.keystore.key} (Kafka's own PEM settings), so the engine never needs the store
 * passwords. Everything else passes through unchanged; the engine ignores keys it does not know. A
 * store file is read only when regular and bounded ({@link SettingFiles}).
 */
public final class KafkaClientConfigTranslator {

  private KafkaClientConfigTranslator() {}

  public static Map<String, String> translate(Map<String, ?> settings) {
    Map<String, String> out = new LinkedHashMap<>();
    settings.forEach(
        (key, value) -> {
          String text = asString(value);
          if (text != null) {
            out.put(key, text);
          }
        });
    convertTruststore(out);
    convertKeystore(out);
    return out;
  }

  static String asString(Object value) {
    if (value == null) {
      return null;
    }
    if (value instanceof Password password) {
      return password.value();
    }
    if (value instanceof Collection<?> list) {
      return list.stream().map(String::valueOf).collect(Collectors.joining(","));
    }
    if (value instanceof Class<?> type) {
      return type.getName();
    }
    return value.toString();
  }

  private static String storeType(Map<String, String> props, String key) {
    // Kafka's default store type is JKS.
    return props.getOrDefault(key, "JKS").trim().toUpperCase(Locale.ROOT);
  }

  private static boolean javaStore(String type) {
    return type.equals("JKS") || type.equals("PKCS12");
  }

  private static void convertTruststore(Map<String, String> props) {
    String location = blankToNull(props.get("ssl.truststore.location"));
    String type = storeType(props, "ssl.truststore.type");
    if (location == null || !javaStore(type)) {
      return;
    }
    KeyStore store =
        load(location, type, props.get("ssl.truststore.password"), "ssl.truststore.location");
    StringBuilder pem = new StringBuilder();
    try {
      for (String alias : Collections.list(store.aliases())) {
        Certificate cert = store.getCertificate(alias);
        if (cert != null) {
          appendPem(pem, "CERTIFICATE", cert.getEncoded());
        }
      }
    } catch (GeneralSecurityException e) {
      throw configError("ssl.truststore.location", "cannot read " + location + ": " + e, e);
    }
    if (pem.length() == 0) {
      throw configError(
          "ssl.truststore.location", location + " holds no certificate to trust", null);
    }
    props.remove("ssl.truststore.location");
    props.remove("ssl.truststore.password");
    props.put("ssl.truststore.type", "PEM");
    props.put("ssl.truststore.certificates", pem.toString());
  }

  private static void convertKeystore(Map<String, String> props) {
    String location = blankToNull(props.get("ssl.keystore.location"));
    String type = storeType(props, "ssl.keystore.type");
    if (location == null || !javaStore(type)) {
      return;
    }
    String storePassword = props.get("ssl.keystore.password");
    KeyStore store = load(location, type, storePassword, "ssl.keystore.location");
    String keyPassword = props.getOrDefault("ssl.key.password", storePassword);
    try {
      for (String alias : Collections.list(store.aliases())) {
        if (!store.isKeyEntry(alias)) {
          continue;
        }
        Key key = store.getKey(alias, chars(keyPassword));
        if (!(key instanceof PrivateKey)) {
          continue;
        }
        StringBuilder chain = new StringBuilder();
        for (Certificate cert : store.getCertificateChain(alias)) {
          appendPem(chain, "CERTIFICATE", cert.getEncoded());
        }
        StringBuilder keyPem = new StringBuilder();
        appendPem(keyPem, "PRIVATE KEY", key.getEncoded());
        props.remove("ssl.keystore.location");
        props.remove("ssl.keystore.password");
        props.remove("ssl.key.password");
        props.put("ssl.keystore.type", "PEM");
        props.put("ssl.keystore.certificate.chain", chain.toString());
        props.put("ssl.keystore.key", keyPem.toString());
        return;
      }
    } catch (GeneralSecurityException e) {
      throw configError(
          "ssl.keystore.location", "cannot read the key in " + location + ": " + e, e);
    }
    throw configError("ssl.keystore.location", location + " holds no private key", null);
  }

  private static KeyStore load(String location, String type, String password, String key) {
    try (InputStream in = new ByteArrayInputStream(SettingFiles.read(Path.of(location)))) {
      KeyStore store = KeyStore.getInstance(type);
      store.load(in, chars(password));
      return store;
    } catch (SettingFiles.RefusedFileException e) {
      throw configError(key, e.getMessage(), e);
    } catch (IOException | GeneralSecurityException e) {
      throw configError(key, "cannot open " + type + " store " + location + ": " + e, e);
    }
  }

  private static char[] chars(String password) {
    return password == null ? null : password.toCharArray();
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.trim();
  }

  private static void appendPem(StringBuilder out, String label, byte[] der) {
    out.append("-----BEGIN ").append(label).append("-----\n");
    out.append(Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der));
    out.append("\n-----END ").append(label).append("-----\n");
  }

  private static EngineException configError(String key, String message, Throwable cause) {
    return new EngineException(
        EngineException.Kind.CONFIG, "invalid configuration `" + key + "`: " + message, cause);
  }
}
