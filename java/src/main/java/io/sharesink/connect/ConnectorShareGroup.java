package io.sharesink.connect;

import io.sharesink.connect.admin.ShareGroupAdmin;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.connector.Connector;

/**
 * A share-mode connector's share group as its stored configuration names it, for the offsets
 * endpoints of sharesink's REST extension: what Connect's {@code /connectors/{c}/offsets} means for
 * a sink connector's consumer group (KIP-875), said of the share group. Each call uses an admin
 * client built as the connector's own ({@link ConnectorClients}: the worker's admin settings and
 * the connector's {@code admin.override.*}, under the worker's override policy), so a REST caller
 * reaches no group and no cluster the connector itself could not.
 */
public final class ConnectorShareGroup {

  /** Admin calls of one offsets request: Connect's own REST requests time out after 90 s. */
  static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  private final String connectorName;
  private final String groupId;
  private final String autoOffsetReset;
  private final Map<String, Object> adminSettings;
  private final Time time;

  private ConnectorShareGroup(
      String connectorName,
      String groupId,
      String autoOffsetReset,
      Map<String, Object> adminSettings,
      Time time) {
    this.connectorName = connectorName;
    this.groupId = groupId;
    this.autoOffsetReset = autoOffsetReset;
    this.adminSettings = adminSettings;
    this.time = time;
  }

  /** Whether a stored connector configuration runs through sharesink (either form). */
  public static boolean runsInShareMode(Map<String, String> storedConfig) {
    return storedConfig != null
        && ShareModeForm.isShareSinkConnector(storedConfig.get(LegacyConfigs.CONNECTOR_CLASS));
  }

  /**
   * The share group of connector {@code connectorName} on this worker.
   *
   * @throws ConfigException when the stored configuration is not valid (any more)
   * @throws org.apache.kafka.connect.errors.ConnectException when the worker's override policy
   *     refuses the connector's client settings: its connector could not start either
   * @throws ConfigException when a file the admin settings name is no regular file within the bound
   *     ({@link ClientFiles})
   */
  public static ConnectorShareGroup of(String connectorName, Map<String, String> storedConfig) {
    return of(connectorName, storedConfig, WorkerDefaults.current());
  }

  /**
   * {@link #of(String, Map)} on a worker whose configuration is {@code worker}. The stored
   * configuration is resolved with the worker's config providers first, as the herder resolves it
   * for the connector ({@link WorkerConfigProviders}), so {@code ${file:...}} in its admin settings
   * means here what it means to the connector.
   */
  static ConnectorShareGroup of(
      String connectorName, Map<String, String> storedConfig, WorkerDefaults worker) {
    Map<String, String> resolved = WorkerConfigProviders.resolve(worker, storedConfig);
    ShareSinkConfig config;
    try {
      config = new ShareSinkConfig(resolved);
    } catch (ConfigException e) {
      // The message would hold a resolved value, which may be a secret.
      throw new ConfigException(
          "the configuration of connector "
              + connectorName
              + ", resolved with the worker's config providers, is not valid");
    }
    ConnectorClients clients = ConnectorClients.of(worker, resolved);
    clients.ensureAllowed(connectorName, legacyClassOrOurs(config));
    ClientFiles.ensureSafe(clients);
    return new ConnectorShareGroup(
        connectorName,
        config.groupId(connectorName),
        config.autoOffsetReset(),
        clients.admin(),
        Time.SYSTEM);
  }

  private static Class<? extends Connector> legacyClassOrOurs(ShareSinkConfig config) {
    try {
      return LegacyPlugins.loadSinkConnectorClass(
          ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, config.sinkConnectorClass());
    } catch (ConfigException | LinkageError e) {
      return ShareSinkConnector.class; // the policy then sees our class, as validation does
    }
  }

  public String groupId() {
    return groupId;
  }

  /** The settings of this group's admin clients (tests). */
  Map<String, Object> adminSettings() {
    return adminSettings;
  }

  /**
   * Per partition the group has state for: an offset below which every record has been delivered
   * and acknowledged, and the lag (records at or above it that are not yet). The broker persists
   * the share-partition start offset lazily (it trails the acknowledgements until the partition's
   * next activity), so a partition with no lag is shown at its end, where its next delivery starts;
   * otherwise at the start offset the broker reports.
   */
  public Map<TopicPartition, Position> positions() {
    try (ShareGroupAdmin admin = openAdmin()) {
      Map<TopicPartition, SharePartitionOffsetInfo> infos = admin.shareGroupOffsets(groupId);
      List<TopicPartition> caughtUp =
          infos.entrySet().stream()
              .filter(e -> e.getValue().lag().orElse(-1L) == 0)
              .map(Map.Entry::getKey)
              .toList();
      Map<TopicPartition, Long> ends =
          caughtUp.isEmpty()
              ? Map.of()
              : admin.resetPositions(caughtUp, "latest", time.milliseconds());
      Map<TopicPartition, Position> out = new TreeMap<>(ConnectorShareGroup::byTopicThenPartition);
      infos.forEach(
          (tp, info) ->
              out.put(
                  tp,
                  new Position(
                      Math.max(info.startOffset(), ends.getOrDefault(tp, -1L)),
                      info.lag().orElse(null))));
      return out;
    }
  }

  /**
   * Where a share-partition stands: every record below {@code offset} is delivered and
   * acknowledged; {@code lag} (null when the broker does not say) records at or above it are not.
   */
  public record Position(long offset, Long lag) {}

  /**
   * Sets start offsets; a null offset resets its partition to where {@code share.auto.offset.reset}
   * starts it now. The group must have no members (the connector stopped).
   */
  public void alterStartOffsets(Map<TopicPartition, Long> offsets) {
    try (ShareGroupAdmin admin = openAdmin()) {
      Map<TopicPartition, Long> target = new HashMap<>();
      Map<TopicPartition, Long> resets = new HashMap<>();
      offsets.forEach((tp, offset) -> (offset == null ? resets : target).put(tp, offset));
      if (!resets.isEmpty()) {
        target.putAll(admin.resetPositions(resets.keySet(), autoOffsetReset, time.milliseconds()));
      }
      admin.alterShareGroupOffsets(groupId, target);
    }
  }

  /**
   * Resets every partition the group has state for to where {@code share.auto.offset.reset} starts
   * it now (a partition without state starts there anyway). The start offsets are set, not deleted,
   * so the next start does not seed them from the classic group again ({@code
   * share.migration.enable}). Returns what was set.
   */
  public Map<TopicPartition, Long> resetStartOffsets() {
    try (ShareGroupAdmin admin = openAdmin()) {
      Collection<TopicPartition> partitions = admin.shareGroupOffsets(groupId).keySet();
      if (partitions.isEmpty()) {
        return Map.of();
      }
      Map<TopicPartition, Long> target =
          admin.resetPositions(partitions, autoOffsetReset, time.milliseconds());
      admin.alterShareGroupOffsets(groupId, target);
      return target;
    }
  }

  private ShareGroupAdmin openAdmin() {
    return ShareGroupAdmin.create(
        adminSettings, "connector-share-offsets-" + connectorName, ADMIN_TIMEOUT);
  }

  private static int byTopicThenPartition(TopicPartition a, TopicPartition b) {
    int byTopic = a.topic().compareTo(b.topic());
    return byTopic != 0 ? byTopic : Integer.compare(a.partition(), b.partition());
  }
}
