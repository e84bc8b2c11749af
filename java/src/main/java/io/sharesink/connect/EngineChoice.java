package io.sharesink.connect;

import io.sharesink.connect.nativelib.NativeLoadException;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Which share consumer a task runs: {@code share.engine=auto} (the default) picks the native engine
 * when its library loads on this worker and the connection settings are ones it speaks, and the
 * worker's own {@code KafkaShareConsumer} otherwise, so that every cluster a Java sink reaches,
 * sharesink reaches too. {@code native} and {@code java} force one (a forced native engine that
 * cannot load fails with the loader's message).
 *
 * <p>The native engine speaks SASL PLAIN and SCRAM-SHA-256/512 with Kafka's own JAAS settings;
 * OAUTHBEARER, GSSAPI, any other mechanism, and login or callback handler classes (AWS MSK's IAM
 * module, OAuth token providers) need the Java client, as does an encrypted PEM key (a PEM key
 * store with {@code ssl.key.password}: the engine decrypts no key, {@code
 * rust/engine/src/pem_key.rs}).
 *
 * @param engine {@link ShareSinkConfig#ENGINE_NATIVE} or {@link ShareSinkConfig#ENGINE_JAVA}
 * @param fallbackReason why {@code auto} fell back to the Java engine (null otherwise), for the
 *     WARN line
 */
public record EngineChoice(String engine, String fallbackReason) {

  /** SASL mechanisms the native engine implements. */
  static final Set<String> NATIVE_MECHANISMS = Set.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512");

  /** Settings naming classes the Java client loads into the login; the native engine has none. */
  static final Set<String> JAVA_ONLY_CLASSES =
      Set.of(
          "sasl.login.class",
          "sasl.login.callback.handler.class",
          "sasl.client.callback.handler.class");

  /**
   * @param configured the {@code share.engine} value (auto, native, java)
   * @param clientSettings the connection settings the task's consumer gets
   * @param nativeLoad loads the native library (once per JVM) and reports its failure
   */
  public static EngineChoice choose(
      String configured,
      Map<String, ?> clientSettings,
      Supplier<Optional<NativeLoadException>> nativeLoad) {
    String kind = configured == null ? "" : configured.trim().toLowerCase(Locale.ROOT);
    if (ShareSinkConfig.ENGINE_JAVA.equals(kind)) {
      return new EngineChoice(ShareSinkConfig.ENGINE_JAVA, null);
    }
    if (ShareSinkConfig.ENGINE_NATIVE.equals(kind)) {
      return new EngineChoice(ShareSinkConfig.ENGINE_NATIVE, null);
    }
    String unsupported = javaOnlySecurity(clientSettings);
    if (unsupported != null) {
      return new EngineChoice(ShareSinkConfig.ENGINE_JAVA, unsupported);
    }
    Optional<NativeLoadException> failure = nativeLoad.get();
    if (failure.isPresent()) {
      return new EngineChoice(
          ShareSinkConfig.ENGINE_JAVA,
          "the native engine does not load on this worker: " + failure.get().getMessage());
    }
    return new EngineChoice(ShareSinkConfig.ENGINE_NATIVE, null);
  }

  /** What in the settings only the Java client can do, or null. */
  static String javaOnlySecurity(Map<String, ?> settings) {
    String protocol = text(settings.get("security.protocol")).toUpperCase(Locale.ROOT);
    if (protocol.startsWith("SASL")) {
      String mechanism = text(settings.get("sasl.mechanism")).toUpperCase(Locale.ROOT);
      if (mechanism.isEmpty()) {
        mechanism = "GSSAPI"; // Kafka's default mechanism
      }
      if (!NATIVE_MECHANISMS.contains(mechanism)) {
        return "sasl.mechanism="
            + mechanism
            + " needs the Java client (the native engine speaks "
            + String.join(", ", NATIVE_MECHANISMS.stream().sorted().toList())
            + ")";
      }
    }
    if ((protocol.equals("SSL") || protocol.equals("SASL_SSL"))
        && text(settings.get("ssl.keystore.type")).equalsIgnoreCase("PEM")
        && !text(settings.get("ssl.key.password")).isEmpty()) {
      return "ssl.key.password is set for a PEM key store: Kafka's client decrypts the key, the"
          + " native engine decrypts none";
    }
    for (String key : JAVA_ONLY_CLASSES.stream().sorted().toList()) {
      if (!text(settings.get(key)).isEmpty()) {
        return key + " names a class only the Java client can load";
      }
    }
    return null;
  }

  private static String text(Object value) {
    if (value instanceof Class<?> c) {
      return c.getName();
    }
    return value == null ? "" : value.toString().trim();
  }
}
