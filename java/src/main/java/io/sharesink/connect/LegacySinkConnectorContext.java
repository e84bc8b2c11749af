package io.sharesink.connect;

import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.ConnectorContext;
import org.apache.kafka.connect.sink.SinkConnectorContext;

/**
 * The context the legacy sink connector gets: {@code SinkConnector.context()} casts to {@link
 * SinkConnectorContext}, so it must be one. Everything goes to our own connector's context, so a
 * reconfiguration request or an error raised by the legacy connector acts on ours.
 */
final class LegacySinkConnectorContext implements SinkConnectorContext {

  private final ConnectorContext ours;

  LegacySinkConnectorContext(ConnectorContext ours) {
    this.ours = ours;
  }

  @Override
  public void requestTaskReconfiguration() {
    ours.requestTaskReconfiguration();
  }

  @Override
  public void raiseError(Exception e) {
    ours.raiseError(e);
  }

  @Override
  public PluginMetrics pluginMetrics() {
    return ours.pluginMetrics();
  }
}
