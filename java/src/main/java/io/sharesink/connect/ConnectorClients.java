package io.sharesink.connect;

import io.sharesink.connect.sink.SinkDriverConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.connector.policy.ConnectorClientConfigRequest.ClientType;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * The Kafka clients of one share-mode connector, settled as the classic runtime settles a sink
 * connector's, and what the worker's override policy says about everything the connector adds. The
 * rule: share mode grants a connector config nothing the classic runtime would not grant under the
 * same worker settings (docs/security.md).
 *
 * <ul>
 *   <li><b>Share consumer</b> ({@link ShareConsumerSettings}), as Connect's {@code
 *       Worker.baseConsumerConfigs}: the worker's {@code bootstrap.servers}, its {@code
 *       consumer.*}, then the connector's {@code consumer.override.*} and {@code share.consumer.*}.
 *       The worker's top-level security settings (its own principal) are not taken.
 *   <li><b>DLQ producer</b>, as {@code Worker.baseProducerConfigs}: {@code bootstrap.servers}, the
 *       worker's {@code producer.*}, the connector's {@code producer.override.*}.
 *   <li><b>Admin clients</b> (group configs, start offsets, lag, topic listing, the DLQ topic), as
 *       {@code Worker.adminConfigs}: the worker's top-level settings, its {@code admin.*}, the
 *       connector's {@code admin.override.*}.
 * </ul>
 *
 * <p>Every key a connector adds goes through the worker's {@code
 * connector.client.config.override.policy} as the matching {@code *.override.*} key would: {@code
 * consumer.override.*} and {@code share.consumer.*} as consumer overrides, {@code share.group.id}
 * as the consumer's {@code group.id}, {@code producer.override.*} and {@code admin.override.*} as
 * the producer's and admin's. Only the KIP's switch, {@code consumer.override.group.protocol}, is
 * not asked about: it selects the runtime, it is no client setting.
 */
final class ConnectorClients {

  static final String BOOTSTRAP_SERVERS = "bootstrap.servers";
  static final String PRODUCER_OVERRIDE_PREFIX = "producer.override.";
  static final String ADMIN_OVERRIDE_PREFIX = "admin.override.";
  static final String WORKER_PRODUCER_PREFIX = "producer.";
  static final String WORKER_ADMIN_PREFIX = "admin.";

  /** One client setting a connector supplies. */
  record Override(String connectorKey, ClientType clientType, String clientKey, String value) {}

  private final WorkerDefaults worker;
  private final Map<String, String> props;
  private final ShareConsumerSettings consumer;
  private final ClientLayers producer;
  private final ClientLayers admin;

  private ConnectorClients(WorkerDefaults worker, Map<String, String> props) {
    this.worker = worker;
    this.props = props;
    this.consumer = ShareConsumerSettings.layer(worker, props);
    this.producer = producerLayers(worker, props);
    this.admin = adminLayers(worker, props);
  }

  /** The clients of a connector or task configuration {@code props} on this worker. */
  static ConnectorClients of(WorkerDefaults worker, Map<String, ?> props) {
    Map<String, String> text = new LinkedHashMap<>();
    props.forEach(
        (key, value) -> {
          if (value != null) {
            Object v = value instanceof Password p ? p.value() : value;
            text.put(key, v.toString());
          }
        });
    return new ConnectorClients(worker, Collections.unmodifiableMap(text));
  }

  /** The share consumer's settings (without {@code group.id}, which the task adds). */
  ShareConsumerSettings consumer() {
    return consumer;
  }

  /** The DLQ producer's settings. */
  Map<String, Object> producer() {
    return producer.settings();
  }

  /** The settings of the connector's and tasks' admin clients. */
  Map<String, Object> admin() {
    return admin.settings();
  }

  /** The worker configuration these settings come from. */
  WorkerDefaults worker() {
    return worker;
  }

  /**
   * One client's settings (by Kafka client name) and where each came from ({@code origin}: the
   * connector key, or {@code worker <key>}).
   */
  record Client(ClientType type, Map<String, Object> settings, Function<String, String> origin) {}

  /** The share consumer's, the DLQ producer's and the admin clients' settings. */
  List<Client> all() {
    return List.of(
        new Client(ClientType.CONSUMER, consumer.settings(), consumer::origin),
        new Client(ClientType.PRODUCER, producer.settings(), producer::origin),
        new Client(ClientType.ADMIN, admin.settings(), admin::origin));
  }

  // ------------------------------------------------------------------------------------------
  // the override policy

  /** Every client setting the connector supplies, in the order the layers apply them. */
  List<Override> overrides() {
    List<Override> out = new ArrayList<>();
    collect(out, ShareConsumerSettings.CONNECTOR_OVERRIDE_PREFIX, ClientType.CONSUMER);
    collect(out, ShareSinkConfig.CONSUMER_PREFIX, ClientType.CONSUMER);
    String groupId = props.get(ShareSinkConfig.GROUP_ID_CONFIG);
    if (groupId != null && !groupId.isBlank()) {
      out.add(
          new Override(
              ShareSinkConfig.GROUP_ID_CONFIG, ClientType.CONSUMER, "group.id", groupId.trim()));
    }
    String stuckTimeout = props.get(SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG);
    if (stuckTimeout != null) {
      // It sets how long the share consumer holds fetched records unpolled: a consumer
      // setting, asked of the policy as the one it acts as.
      out.add(
          new Override(
              SinkDriverConfig.TASK_STUCK_TIMEOUT_MS_CONFIG,
              ClientType.CONSUMER,
              ShareEngineOpener.BUFFER_HOLD_MAX_MS,
              stuckTimeout.trim()));
    }
    collect(out, PRODUCER_OVERRIDE_PREFIX, ClientType.PRODUCER);
    collect(out, ADMIN_OVERRIDE_PREFIX, ClientType.ADMIN);
    return out;
  }

  private void collect(List<Override> out, String prefix, ClientType clientType) {
    props.keySet().stream()
        .filter(k -> k.startsWith(prefix) && k.length() > prefix.length())
        .filter(k -> !k.equals(ShareModeForm.FLAG_CONFIG))
        .sorted()
        .forEach(
            k -> out.add(new Override(k, clientType, k.substring(prefix.length()), props.get(k))));
  }

  /**
   * The connector keys the worker's policy refuses, each with the policy's messages; empty when it
   * allows all.
   *
   * @param connectorClass the legacy sink's class, shown to the policy as the runtime would
   * @param clientTypes the client types to ask about
   */
  Map<String, List<String>> refusals(
      String connectorName,
      Class<? extends Connector> connectorClass,
      Set<ClientType> clientTypes) {
    List<Override> overrides = overrides();
    Map<String, List<String>> refused = new LinkedHashMap<>();
    ClientOverridePolicy policy = ClientOverridePolicy.of(worker);
    for (ClientType clientType : clientTypes) {
      Map<String, String> byClientKey = new LinkedHashMap<>();
      overrides.stream()
          .filter(o -> o.clientType() == clientType)
          .forEach(o -> byClientKey.put(o.clientKey(), o.value()));
      Map<String, List<String>> answers =
          policy.refusals(connectorName, connectorClass, clientType, byClientKey);
      overrides.stream()
          .filter(o -> o.clientType() == clientType && answers.containsKey(o.clientKey()))
          .forEach(o -> refused.put(o.connectorKey(), named(o, answers.get(o.clientKey()))));
    }
    return refused;
  }

  /**
   * The policy's messages, each naming the key when they come from sharesink itself (an invisible
   * worker configuration): Connect's answer to a create lists the messages without their keys.
   */
  private List<String> named(Override override, List<String> messages) {
    if (worker.visible()) {
      return messages;
    }
    return messages.stream().map(m -> override.connectorKey() + ": " + m).toList();
  }

  /** {@link #refusals} over every client type. */
  Map<String, List<String>> refusals(
      String connectorName, Class<? extends Connector> connectorClass) {
    return refusals(connectorName, connectorClass, EnumSet.allOf(ClientType.class));
  }

  /**
   * At connector and task start, as the worker does before it builds a sink task's clients: throws
   * when the policy refuses any override. The message names the keys and the policy's reasons,
   * never a value (values may be secrets resolved from a config provider).
   */
  void ensureAllowed(String connectorName, Class<? extends Connector> connectorClass) {
    Map<String, List<String>> refused = refusals(connectorName, connectorClass);
    if (refused.isEmpty()) {
      return;
    }
    throw new ConnectException(refusalMessage(refused));
  }

  String refusalMessage(Map<String, List<String>> refused) {
    return "Client config overrides not allowed by the worker's "
        + ClientOverridePolicy.POLICY_CONFIG
        + "="
        + ClientOverridePolicy.of(worker).name()
        + ": "
        + refused.entrySet().stream()
            .map(e -> e.getKey() + " (" + String.join(" ", e.getValue()) + ")")
            .collect(Collectors.joining("; "));
  }

  /**
   * The client types whose overrides the runtime itself asks the policy about for our connector,
   * which it takes for a source connector (Connect's {@code AbstractHerder.connectorUses*} and
   * {@code DistributedHerder}'s): validation leaves those to it, so a refusal is not reported
   * twice. Start checks every type regardless. When the worker's configuration cannot be seen,
   * none: the runtime asks the worker's real policy, but sharesink's start refuses every override
   * then, so validation says so for every type.
   */
  Set<ClientType> askedByTheRuntime() {
    if (!worker.visible()) {
      return EnumSet.noneOf(ClientType.class);
    }
    Set<ClientType> asked = EnumSet.of(ClientType.PRODUCER);
    boolean separateOffsetsClients =
        "enabled"
                .equalsIgnoreCase(worker.settings().getOrDefault("exactly.once.source.support", ""))
            || !props.getOrDefault("offsets.storage.topic", "").isBlank();
    if (separateOffsetsClients
        || props.keySet().stream().anyMatch(k -> k.startsWith("topic.creation."))) {
      asked.add(ClientType.ADMIN);
    }
    if (separateOffsetsClients) {
      asked.add(ClientType.CONSUMER);
    }
    return asked;
  }

  // ------------------------------------------------------------------------------------------
  // where the clients connect

  /**
   * What keeps the share group's clients from connecting to the right cluster, by the connector key
   * to blame ({@value ShareSinkConfig#BOOTSTRAP_SERVERS_CONFIG} when the worker's settings are at
   * fault); empty when nothing does. Ask only once the policy allowed the overrides: this looks up
   * the hosts a connector names.
   */
  Map<String, String> connectionProblems(BootstrapServers.HostResolver resolver) {
    Map<String, String> problems = new LinkedHashMap<>();
    String consumerServers = text(consumer.settings().get(BOOTSTRAP_SERVERS));
    String consumerOrigin = consumer.origin(BOOTSTRAP_SERVERS);
    if (consumerServers.isEmpty()) {
      problems.put(ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG, missingBootstrapMessage());
      return problems;
    }
    BootstrapServers.problem(consumerServers, resolver)
        .ifPresent(
            problem -> {
              if (fromConnector(consumerOrigin)) {
                problems.put(
                    consumerOrigin, consumerOrigin + "=" + consumerServers + ": " + problem);
              } else {
                problems.put(
                    ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG,
                    consumerOrigin.substring("worker ".length())
                        + "="
                        + consumerServers
                        + " from "
                        + worker
                        + ": "
                        + problem
                        + " (set "
                        + ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG
                        + " on the connector to use other servers)");
              }
            });
    String adminServers = text(admin.settings().get(BOOTSTRAP_SERVERS));
    String adminOrigin = admin.origin(BOOTSTRAP_SERVERS);
    if (fromConnector(adminOrigin)) {
      BootstrapServers.problem(adminServers, resolver)
          .ifPresent(p -> problems.put(adminOrigin, adminOrigin + "=" + adminServers + ": " + p));
    }
    if (problems.isEmpty()
        && fromConnector(consumerOrigin)
        && !fromConnector(adminOrigin)
        && !hostSet(consumerServers).equals(hostSet(adminServers))) {
      problems.put(
          consumerOrigin,
          consumerOrigin
              + " points the share consumer at "
              + consumerServers
              + ", but the admin client that sets the share group's configs and start offsets"
              + " and reads its lag connects to "
              + (adminServers.isEmpty() ? "no servers" : adminServers)
              + " (the worker's "
              + (adminOrigin == null
                  ? BOOTSTRAP_SERVERS
                  : adminOrigin.substring("worker ".length()))
              + "), as the classic runtime's admin clients do: set "
              + ADMIN_OVERRIDE_PREFIX
              + BOOTSTRAP_SERVERS
              + " (and the admin's security settings, "
              + ADMIN_OVERRIDE_PREFIX
              + "*) to the consumer's cluster too ("
              + ShareSinkConfig.CONSUMER_PREFIX
              + "* configures the share consumer only; it used to configure the admin client"
              + " and the DLQ producer as well).");
    }
    return problems;
  }

  /**
   * The connector key that chose the admin client's servers ({@code admin.override.bootstrap
   * .servers}), when the connector chose them rather than the worker.
   */
  Optional<String> adminServersChosenBy() {
    String origin = admin.origin(BOOTSTRAP_SERVERS);
    return fromConnector(origin) ? Optional.of(origin) : Optional.empty();
  }

  /** {@link #connectionProblems} as an exception, for a connector or task about to connect. */
  void ensureConnectable(BootstrapServers.HostResolver resolver) {
    Map<String, String> problems = connectionProblems(resolver);
    if (!problems.isEmpty()) {
      throw new org.apache.kafka.common.config.ConfigException(
          String.join("; ", problems.values()));
    }
  }

  String missingBootstrapMessage() {
    return "no bootstrap servers for the share group: set "
        + ShareSinkConfig.BOOTSTRAP_SERVERS_CONFIG
        + " on the connector, or bootstrap.servers in "
        + worker;
  }

  /** Whether a setting's origin is a connector key (not the worker's configuration). */
  static boolean fromConnector(String origin) {
    return origin != null && !origin.startsWith("worker ");
  }

  private static Set<String> hostSet(String servers) {
    return Arrays.stream(servers.split(","))
        .map(String::trim)
        .filter(s -> !s.isEmpty())
        .collect(Collectors.toCollection(TreeSet::new));
  }

  private static String text(Object value) {
    return value == null ? "" : value.toString().trim();
  }

  // ------------------------------------------------------------------------------------------
  // layers

  private static ClientLayers producerLayers(WorkerDefaults worker, Map<String, String> props) {
    ClientLayers layers = new ClientLayers();
    layers.put(BOOTSTRAP_SERVERS, worker.bootstrapServers(), "worker " + BOOTSTRAP_SERVERS);
    layers.putPrefixed(
        worker.settings(), WORKER_PRODUCER_PREFIX, "worker ", PRODUCER_OVERRIDE_PREFIX);
    layers.putPrefixed(props, PRODUCER_OVERRIDE_PREFIX, "", null);
    layers.retain(ProducerConfig.configNames());
    return layers;
  }

  private static ClientLayers adminLayers(WorkerDefaults worker, Map<String, String> props) {
    ClientLayers layers = new ClientLayers();
    layers.put(BOOTSTRAP_SERVERS, worker.bootstrapServers(), "worker " + BOOTSTRAP_SERVERS);
    // Connect's Worker.adminConfigs: the top-level settings for backwards compatibility, but not
    // those with a client's prefix.
    worker
        .settings()
        .forEach(
            (key, value) -> {
              if (!key.startsWith(WORKER_ADMIN_PREFIX)
                  && !key.startsWith(WORKER_PRODUCER_PREFIX)
                  && !key.startsWith(ShareConsumerSettings.WORKER_CONSUMER_PREFIX)) {
                layers.put(key, value, "worker " + key);
              }
            });
    layers.putPrefixed(worker.settings(), WORKER_ADMIN_PREFIX, "worker ", ADMIN_OVERRIDE_PREFIX);
    layers.putPrefixed(props, ADMIN_OVERRIDE_PREFIX, "", null);
    layers.retain(AdminClientConfig.configNames());
    return layers;
  }

  /** Client settings with where each came from, as the operator wrote it. */
  static final class ClientLayers {
    private final Map<String, Object> settings = new LinkedHashMap<>();
    private final Map<String, String> origins = new LinkedHashMap<>();

    void put(String clientKey, Object value, String origin) {
      settings.put(clientKey, value instanceof Password p ? p.value() : value.toString().trim());
      origins.put(clientKey, origin);
    }

    /**
     * Every {@code prefix}ed setting of {@code source} under its client key; {@code skip}: a longer
     * prefix that belongs to another layer (a worker file holds no {@code *.override.*}, but never
     * read one as a worker setting).
     */
    void putPrefixed(Map<String, ?> source, String prefix, String originLabel, String skip) {
      source.forEach(
          (key, value) -> {
            if (value != null
                && key.startsWith(prefix)
                && key.length() > prefix.length()
                && (skip == null || !key.startsWith(skip))) {
              put(key.substring(prefix.length()), value, originLabel + key);
            }
          });
    }

    void retain(Set<String> clientKeys) {
      settings.keySet().retainAll(clientKeys);
      origins.keySet().retainAll(clientKeys);
    }

    Object remove(String clientKey) {
      origins.remove(clientKey);
      return settings.remove(clientKey);
    }

    Map<String, Object> settings() {
      return Collections.unmodifiableMap(settings);
    }

    Map<String, String> origins() {
      return Collections.unmodifiableMap(origins);
    }

    String origin(String clientKey) {
      return origins.get(clientKey);
    }
  }
}
