package io.sharesink.connect;

import java.util.Map;

/**
 * Hands the worker's own configuration from sharesink's REST extension (which the worker configures
 * with it) to the connectors and tasks of this plugin on the same worker, which then prefer it to
 * the worker file named on the command line.
 */
public final class WorkerConfigHandoff {

  private WorkerConfigHandoff() {}

  /** Called by the REST extension's {@code configure} with the worker's configuration. */
  public static void fromRestExtension(Map<String, ?> workerConfig) {
    WorkerDefaults.useRestExtensionConfig(workerConfig);
  }

  /** Called by the REST extension's {@code close}. */
  public static void forgetRestExtension() {
    WorkerDefaults.clearRestExtensionConfig();
  }
}
