package io.sharesink.connect.rest;

import java.util.Map;
import java.util.Optional;
import org.apache.kafka.connect.errors.NotFoundException;
import org.apache.kafka.connect.health.ConnectClusterState;

/**
 * Stored connector configurations, read through the worker's herder. A read waits for the herder
 * thread (Connect bounds it by the rebalance timeout), so only PATCH requests that touch the switch
 * and {@link StoredForms}' own thread call it.
 */
class ClusterConfigs {

  /** What a read found. */
  sealed interface Read permits Found, Missing, Unavailable {}

  record Found(Map<String, String> config) implements Read {}

  record Missing() implements Read {}

  /**
   * The herder could not tell: {@code rebalancing} when it waits for a rebalance (Connect answers
   * its own requests 409 then), else a timeout or another failure.
   */
  record Unavailable(String reason, boolean rebalancing) implements Read {}

  private final ConnectClusterState state;

  ClusterConfigs(ConnectClusterState state) {
    this.state = state;
  }

  /**
   * The stored configuration of {@code connector}; empty when it does not exist or the herder
   * cannot tell right now.
   */
  Optional<Map<String, String>> stored(String connector) {
    return read(connector) instanceof Found found ? Optional.of(found.config()) : Optional.empty();
  }

  Read read(String connector) {
    try {
      Map<String, String> config = state.connectorConfig(connector);
      return config == null ? new Missing() : new Found(config);
    } catch (RuntimeException e) {
      // Connect wraps the herder's exception (in an ExecutionException) in its own.
      boolean rebalancing = false;
      Throwable root = e;
      for (Throwable t = e; t != null; t = t.getCause()) {
        root = t;
        if (t instanceof NotFoundException) {
          return new Missing();
        }
        // connect-runtime's RebalanceNeededException: not on the plugin's compile path
        rebalancing |= t.getClass().getSimpleName().equals("RebalanceNeededException");
      }
      String reason = root == e ? e.getMessage() : e.getMessage() + ": " + root.getMessage();
      return new Unavailable(reason, rebalancing);
    }
  }
}
