package io.sharesink.connect.rest;

import java.util.Map;
import java.util.Optional;
import org.apache.kafka.connect.health.ConnectClusterState;

/** Stored connector configurations, read through the worker's herder. */
class ClusterConfigs {

  private final ConnectClusterState state;

  ClusterConfigs(ConnectClusterState state) {
    this.state = state;
  }

  /**
   * The stored configuration of {@code connector}; empty when it does not exist or the herder
   * cannot tell right now (a rebalance, a timeout): callers then leave the request alone.
   */
  Optional<Map<String, String>> stored(String connector) {
    try {
      return Optional.ofNullable(state.connectorConfig(connector));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }
}
