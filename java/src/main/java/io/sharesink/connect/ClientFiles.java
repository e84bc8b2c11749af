package io.sharesink.connect;

import io.sharesink.engine.SettingFiles;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;
import org.apache.kafka.common.security.ssl.DefaultSslEngineFactory;

/**
 * Every file a connector's client settings name, checked before any client reads it: the native
 * engine, Kafka's share consumer, the DLQ producer and the admin clients each read such a file
 * whole when they start, so a path naming {@code /dev/zero}, a FIFO or a 3 GiB sparse file would
 * fill the worker's memory or block a start for good. Only a regular file of at most {@link
 * SettingFiles#MAX_BYTES} is taken; anything else is an error naming the connector key and the path
 * (never a value: a JAAS line holds passwords), at validation, at the connector's start and at each
 * task's start ({@link StartChecks}).
 *
 * <p>The settings that name files, in Kafka 4.4's client configs: {@value
 * SslConfigs#SSL_KEYSTORE_LOCATION_CONFIG} and {@value SslConfigs#SSL_TRUSTSTORE_LOCATION_CONFIG}
 * (any store type), the OAuth assertion files, the OAuth token and JWKS endpoint URLs when they are
 * {@code file:} URLs, and the keytab and ticket cache a JAAS login module names in {@value
 * SaslConfigs#SASL_JAAS_CONFIG} (Kerberos' {@code keyTab=}, {@code ticketCache=}). A file that does
 * not exist is left to the client, which says so when it starts (it may exist only on the worker
 * that runs the task).
 *
 * <p>A PEM key store the connector sets is also checked as Kafka's client takes it: with Kafka's
 * own {@link DefaultSslEngineFactory} (so a PEM key without {@value
 * SslConfigs#SSL_KEY_PASSWORD_CONFIG} must be an unencrypted PKCS#8 key, with it an encrypted one),
 * on the file's contents read here, as Kafka reads a PEM file as both the key and the chain. The
 * native engine follows the same rule ({@code rust/engine/src/pem_key.rs}).
 *
 * <p>Only settings the connector adds are checked (the worker's own are the operator's), and only
 * once the worker's override policy allowed them: a refused setting's path is not even looked at.
 */
final class ClientFiles {

  /** Client settings whose value is a file's path. */
  static final List<String> FILE_SETTINGS =
      List.of(
          SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG,
          SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG,
          "sasl.oauthbearer.assertion.file",
          "sasl.oauthbearer.assertion.private.key.file",
          "sasl.oauthbearer.assertion.template.file");

  /** Client settings whose value is a URL: a file's when its scheme is {@code file}. */
  static final List<String> URL_SETTINGS =
      List.of("sasl.oauthbearer.token.endpoint.url", "sasl.oauthbearer.jwks.endpoint.url");

  /** Options of a JAAS login module that name a file (Kerberos' Krb5LoginModule's). */
  static final List<String> JAAS_FILE_OPTIONS = List.of("keyTab", "ticketCache");

  /** A PEM key store's settings, the one to blame first when Kafka's client refuses it. */
  private static final List<String> KEYSTORE_SETTINGS =
      List.of(
          SslConfigs.SSL_KEYSTORE_KEY_CONFIG,
          SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG,
          SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG,
          SslConfigs.SSL_KEY_PASSWORD_CONFIG,
          SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG,
          SslConfigs.SSL_KEYSTORE_TYPE_CONFIG);

  private static final ConfigDef SSL_CONFIG_DEF = new ConfigDef().withClientSslSupport();

  private ClientFiles() {}

  /**
   * What is wrong with the files the clients' settings name, by connector key; empty if nothing.
   */
  static Map<String, String> problems(ConnectorClients clients) {
    Map<String, String> problems = new LinkedHashMap<>();
    for (ConnectorClients.Client client : clients.all()) {
      client
          .settings()
          .forEach(
              (clientKey, value) -> {
                String origin = client.origin().apply(clientKey);
                String text = text(value);
                if (!ConnectorClients.fromConnector(origin) || text.isEmpty()) {
                  return;
                }
                if (FILE_SETTINGS.contains(clientKey)) {
                  check(text, origin, null).ifPresent(p -> problems.putIfAbsent(origin, p));
                } else if (URL_SETTINGS.contains(clientKey)) {
                  fileUrlPath(text)
                      .flatMap(path -> check(path, origin, null))
                      .ifPresent(p -> problems.putIfAbsent(origin, p));
                } else if (SaslConfigs.SASL_JAAS_CONFIG.equals(clientKey)) {
                  jaasFiles(text)
                      .forEach(
                          (option, path) ->
                              check(path, origin, option)
                                  .ifPresent(p -> problems.putIfAbsent(origin, p)));
                }
              });
      pemKeyStoreProblem(client).ifPresent(p -> problems.putIfAbsent(p.getKey(), p.getValue()));
    }
    return problems;
  }

  /** {@link #problems} as an exception, for a connector or task about to build its clients. */
  static void ensureSafe(ConnectorClients clients) {
    Map<String, String> problems = problems(clients);
    if (!problems.isEmpty()) {
      throw new ConfigException(String.join("; ", problems.values()));
    }
  }

  /** The problem with the file at {@code path}, which connector key {@code key} names. */
  private static Optional<String> check(String path, String key, String jaasOption) {
    try {
      SettingFiles.read(Path.of(path));
      return Optional.empty();
    } catch (SettingFiles.RefusedFileException e) {
      return Optional.of(
          key
              + (jaasOption == null ? "" : " (its " + jaasOption + " option)")
              + ": "
              + e.getMessage()
              + "; a client reads this file whole when it starts, so only a regular file of at"
              + " most "
              + (SettingFiles.MAX_BYTES >> 20)
              + " MiB is taken");
    } catch (NoSuchFileException e) {
      return Optional.empty(); // the client says so at its start, on the worker that runs it
    } catch (IOException | InvalidPathException e) {
      return Optional.empty(); // unreadable here: the client says why at its start
    }
  }

  /** The path of a {@code file:} URL, as Kafka's OAuth settings read it; empty for other URLs. */
  static Optional<String> fileUrlPath(String url) {
    try {
      URI uri = new URI(url.trim());
      if ("file".equalsIgnoreCase(uri.getScheme()) && uri.getRawPath() != null) {
        return Optional.of(uri.getRawPath());
      }
    } catch (URISyntaxException e) {
      // not a URL Kafka's client would take either; it says so at its start
    }
    return Optional.empty();
  }

  /**
   * The files the login modules of a JAAS line name, by option, parsed by Kafka's own parser; empty
   * when Kafka's client would refuse the line anyway (it says why at its start).
   */
  static Map<String, String> jaasFiles(String jaas) {
    Map<String, String> files = new LinkedHashMap<>();
    try {
      JaasContext context =
          JaasContext.loadClientContext(Map.of(SaslConfigs.SASL_JAAS_CONFIG, new Password(jaas)));
      for (AppConfigurationEntry entry : context.configurationEntries()) {
        for (String option : JAAS_FILE_OPTIONS) {
          String path = text(entry.getOptions().get(option));
          if (!path.isEmpty()) {
            files.putIfAbsent(option, path);
          }
        }
      }
    } catch (RuntimeException e) {
      // refused by Kafka's parser: nothing it would read
    }
    return files;
  }

  /**
   * What Kafka's client says of the connector's PEM key store for {@code client}, on the key to
   * blame; empty when it takes it, or when none of the key store's settings is the connector's.
   */
  static Optional<Map.Entry<String, String>> pemKeyStoreProblem(ConnectorClients.Client client) {
    Map<String, Object> settings = client.settings();
    if (!"PEM".equalsIgnoreCase(text(settings.get(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG)))) {
      return Optional.empty();
    }
    Optional<String> blamed =
        KEYSTORE_SETTINGS.stream()
            .filter(k -> !text(settings.get(k)).isEmpty())
            .map(k -> client.origin().apply(k))
            .filter(ConnectorClients::fromConnector)
            .findFirst();
    if (blamed.isEmpty()) {
      return Optional.empty();
    }
    Map<String, Object> store = new HashMap<>();
    for (String key : KEYSTORE_SETTINGS) {
      String value = text(settings.get(key));
      if (!value.isEmpty()) {
        store.put(key, value);
      }
    }
    String location = (String) store.get(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG);
    if (location != null
        && !store.containsKey(SslConfigs.SSL_KEYSTORE_KEY_CONFIG)
        && !store.containsKey(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG)) {
      // Kafka reads a PEM file as both the key and the chain; read here within the bound, so
      // Kafka's parser never opens the file itself.
      String pem;
      try {
        pem = new String(SettingFiles.read(Path.of(location)), StandardCharsets.UTF_8);
      } catch (IOException | InvalidPathException e) {
        return Optional.empty(); // refused above, or left to the client
      }
      store.remove(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG);
      store.put(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, pem);
      store.put(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, pem);
    }
    Optional<String> refusal = kafkaRefusal(store);
    return refusal.map(
        why ->
            Map.entry(
                blamed.get(),
                blamed.get()
                    + ": Kafka's client refuses this PEM key store: "
                    + why
                    + " (without "
                    + SslConfigs.SSL_KEY_PASSWORD_CONFIG
                    + " the key must be one unencrypted PKCS#8 RSA, DSA or EC key, -----BEGIN"
                    + " PRIVATE KEY-----; with it, one encrypted PKCS#8 key)"));
  }

  /**
   * Why Kafka's own SSL engine factory refuses these key store settings; empty if it takes them.
   */
  private static Optional<String> kafkaRefusal(Map<String, Object> keyStore) {
    Map<String, Object> configs =
        new HashMap<>(new AbstractConfig(SSL_CONFIG_DEF, keyStore, false).values());
    configs.put("ssl.client.auth", "none");
    DefaultSslEngineFactory factory = new DefaultSslEngineFactory();
    try {
      factory.configure(configs);
      return Optional.empty();
    } catch (RuntimeException e) {
      // Kafka's and the JDK's messages: they name what is wrong, never a key's bytes.
      List<String> messages = new ArrayList<>();
      for (Throwable t = e; t != null && messages.size() < 4; t = t.getCause()) {
        if (t.getMessage() != null && !messages.contains(t.getMessage())) {
          messages.add(t.getMessage());
        }
      }
      return Optional.of(messages.isEmpty() ? e.getClass().getName() : String.join(": ", messages));
    } finally {
      factory.close();
    }
  }

  private static String text(Object value) {
    if (value == null) {
      return "";
    }
    return (value instanceof Password p ? p.value() : value.toString()).trim();
  }
}
