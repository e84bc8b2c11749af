package io.sharesink.connect;

import io.sharesink.connect.ordering.ShareOrdering;
import java.util.Map;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * The checks the connector's and each task's start both make, in this order, before anything
 * connects: no setting of a source connector's is set ({@link SourceOnlyKeys}: validation refuses
 * them, but a config may have been stored before the check existed); the legacy sink's class loads;
 * this worker's override policy allows every client setting the connector adds ({@link
 * ConnectorClients#ensureAllowed}, as the worker asks before it builds a connector's or a task's
 * clients, however the connector got validated); every file the clients' settings name is a regular
 * file within the bound, and a PEM key store one Kafka's client takes ({@link ClientFiles}: a file
 * may have changed since validation, and a client reading {@code /dev/zero} or a FIFO would fill
 * the worker's memory or never return); for the connector, the configuration is not one the order
 * check refuses ({@link ShareOrdering#ensureRunnable}: validation refuses it, but a config may have
 * been stored before the check existed); and the bootstrap servers are well-formed and known to
 * this worker's DNS ({@link ConnectorClients#ensureConnectable}: it may differ from the one that
 * validated).
 *
 * @param legacyClass the legacy sink connector's class
 * @param clients the connector's client settings, resolved for this worker
 */
record StartChecks(Class<? extends SinkConnector> legacyClass, ConnectorClients clients) {

  /** What a start checks the order for: the connector's does, a task's does not. */
  enum Order {
    CHECK,
    SKIP
  }

  /** Runs the checks; each failure is an exception naming what is wrong. */
  static StartChecks run(
      ShareSinkConfig config,
      Map<String, String> props,
      String connectorName,
      WorkerDefaults worker,
      BootstrapServers.HostResolver resolver,
      Order order) {
    SourceOnlyKeys.ensureAbsent(props);
    Class<? extends SinkConnector> legacyClass =
        LegacyPlugins.loadSinkConnectorClass(
            ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG, config.sinkConnectorClass());
    ConnectorClients clients = ConnectorClients.of(worker, props);
    clients.ensureAllowed(connectorName, legacyClass);
    ClientFiles.ensureSafe(clients);
    if (order == Order.CHECK) {
      ShareOrdering.ensureRunnable(props, legacyClass);
    }
    clients.ensureConnectable(resolver);
    return new StartChecks(legacyClass, clients);
  }
}
