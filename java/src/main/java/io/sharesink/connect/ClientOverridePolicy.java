package io.sharesink.connect;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigValue;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigOverridePolicy;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.health.ConnectorType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The worker's {@code connector.client.config.override.policy}, applied to a connector's {@code
 * consumer.override.*} settings as the classic runtime applies it to a sink connector's: the
 * runtime does not, because to it our connector is a source connector, which has no consumer.
 *
 * <p>The policy is the worker's own class (the built-in ones live in connect-runtime on the
 * worker's class path; the connect-api interface is all this plugin compiles against), instantiated
 * and configured with the worker's configuration as the worker does. A policy that cannot be loaded
 * refuses every override: it exists to keep connectors from overriding settings (a principal), so
 * not being able to ask it must not allow them.
 */
final class ClientOverridePolicy {

  private static final Logger log = LoggerFactory.getLogger(ClientOverridePolicy.class);

  /** The worker's key (WorkerConfig.CONNECTOR_CLIENT_POLICY_CLASS_CONFIG). */
  static final String POLICY_CONFIG = "connector.client.config.override.policy";

  /** The worker's default since Kafka 3.0 (KIP-722), still in 4.4. */
  static final String POLICY_DEFAULT = "All";

  private static final String BUILT_IN_PACKAGE = "org.apache.kafka.connect.connector.policy.";
  private static final String SUFFIX = "ConnectorClientConfigOverridePolicy";

  private final String policyName;
  private final Map<String, ?> workerConfig;

  private ClientOverridePolicy(String policyName, Map<String, ?> workerConfig) {
    this.policyName = policyName;
    this.workerConfig = workerConfig;
  }

  /** The policy {@code worker} names, or Connect's default. */
  static ClientOverridePolicy of(WorkerDefaults worker) {
    String name = worker.settings().get(POLICY_CONFIG);
    if (name == null || name.isBlank()) {
      name = POLICY_DEFAULT;
    }
    return new ClientOverridePolicy(name.trim(), worker.settings());
  }

  String name() {
    return policyName;
  }

  /**
   * What the policy says about each {@code consumer.override.*} setting of {@code connectorProps}
   * (but the switch itself, {@code consumer.override.group.protocol}): the refused ones, by their
   * full key, with the policy's messages. Empty when there are no overrides or all are allowed.
   *
   * @param connectorClass the legacy sink's class, which the policy sees as the runtime would show
   *     it
   */
  Map<String, List<String>> refusals(
      String connectorName,
      Class<? extends Connector> connectorClass,
      Map<String, String> connectorProps) {
    Map<String, Object> overrides = overrides(connectorProps);
    Map<String, List<String>> refused = new LinkedHashMap<>();
    if (overrides.isEmpty()) {
      return refused;
    }
    List<ConfigValue> answers;
    try {
      answers = ask(connectorName, connectorClass, overrides);
    } catch (RuntimeException | LinkageError e) {
      log.warn(
          "Cannot ask the worker's {}={} about the connector's consumer overrides; refusing them",
          POLICY_CONFIG,
          policyName,
          e);
      String message =
          "cannot check this override against the worker's "
              + POLICY_CONFIG
              + "="
              + policyName
              + " ("
              + e
              + "), so it is not allowed";
      overrides.keySet().forEach(k -> refused.put(prefixed(k), List.of(message)));
      return refused;
    }
    for (ConfigValue answer : answers) {
      if (!answer.errorMessages().isEmpty()) {
        refused.put(prefixed(answer.name()), List.copyOf(answer.errorMessages()));
      }
    }
    return refused;
  }

  /**
   * At connector or task start: throws, in the runtime's words (Connect's {@code Worker} when it
   * builds a task's consumer), when the policy refuses an override.
   */
  void ensureAllowed(
      String connectorName,
      Class<? extends Connector> connectorClass,
      Map<String, String> connectorProps) {
    Map<String, List<String>> refused = refusals(connectorName, connectorClass, connectorProps);
    if (refused.isEmpty()) {
      return;
    }
    List<ConfigValue> errors = new ArrayList<>();
    refused.forEach(
        (key, messages) -> {
          String clientKey =
              key.substring(ShareConsumerSettings.CONNECTOR_OVERRIDE_PREFIX.length());
          errors.add(
              new ConfigValue(clientKey, connectorProps.get(key), List.of(), new ArrayList<>()));
          messages.forEach(errors.get(errors.size() - 1)::addErrorMessage);
        });
    throw new ConnectException("Client Config Overrides not allowed " + errors);
  }

  /** The overrides by client key, typed as the runtime types them before asking the policy. */
  static Map<String, Object> overrides(Map<String, String> connectorProps) {
    Map<String, ConfigDef.ConfigKey> keys = ConsumerConfig.configDef().configKeys();
    Map<String, Object> overrides = new LinkedHashMap<>();
    String prefix = ShareConsumerSettings.CONNECTOR_OVERRIDE_PREFIX;
    connectorProps.forEach(
        (key, value) -> {
          if (!key.startsWith(prefix) || key.equals(ShareModeForm.FLAG_CONFIG)) {
            return;
          }
          String clientKey = key.substring(prefix.length());
          overrides.put(clientKey, typed(keys.get(clientKey), clientKey, value));
        });
    return overrides;
  }

  private static Object typed(ConfigDef.ConfigKey def, String clientKey, String value) {
    if (def == null) {
      return value;
    }
    try {
      return ConfigDef.parseType(clientKey, value, def.type);
    } catch (ConfigException e) {
      return value; // the policy judges the key; a bad value is the consumer's to report
    }
  }

  private List<ConfigValue> ask(
      String connectorName,
      Class<? extends Connector> connectorClass,
      Map<String, Object> overrides) {
    ConnectorClientConfigOverridePolicy policy = instantiate();
    try {
      policy.configure(workerConfig);
      List<ConfigValue> answers =
          policy.validate(
              new ConnectorClientConfigRequest(
                  connectorName,
                  ConnectorType.SINK,
                  connectorClass,
                  overrides,
                  ConnectorClientConfigRequest.ClientType.CONSUMER));
      return answers == null ? List.of() : answers;
    } finally {
      try {
        policy.close();
      } catch (Exception e) {
        log.debug("Closing {} failed", policyName, e);
      }
    }
  }

  private ConnectorClientConfigOverridePolicy instantiate() {
    Class<?> type = load();
    if (!ConnectorClientConfigOverridePolicy.class.isAssignableFrom(type)) {
      throw new ConnectException(
          type.getName() + " is not a " + ConnectorClientConfigOverridePolicy.class.getName());
    }
    return LegacyPlugins.newInstance(type.asSubclass(ConnectorClientConfigOverridePolicy.class));
  }

  /**
   * The class, by the names the worker accepts: a class name, or an alias (its simple name, with or
   * without the {@value #SUFFIX} suffix), tried through the worker's plugin loaders (which know
   * every installed policy's alias) and then as one of Kafka's built-in policies.
   */
  private Class<?> load() {
    List<String> candidates = new ArrayList<>();
    candidates.add(policyName);
    if (!policyName.contains(".")) {
      String simple = policyName.endsWith(SUFFIX) ? policyName : policyName + SUFFIX;
      candidates.add(BUILT_IN_PACKAGE + simple);
    }
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    ClassNotFoundException last = null;
    for (ClassLoader loader :
        new ClassLoader[] {context, ClientOverridePolicy.class.getClassLoader()}) {
      if (loader == null) {
        continue;
      }
      for (String candidate : candidates) {
        try {
          return loader.loadClass(candidate);
        } catch (ClassNotFoundException e) {
          last = e;
        }
      }
    }
    throw new ConnectException(
        "no ConnectorClientConfigOverridePolicy class named " + policyName + " on this worker",
        last);
  }

  private static String prefixed(String clientKey) {
    return ShareConsumerSettings.CONNECTOR_OVERRIDE_PREFIX + clientKey;
  }
}
