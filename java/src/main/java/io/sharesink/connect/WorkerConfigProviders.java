package io.sharesink.connect;

import io.sharesink.connect.sink.LoaderSwap;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

/**
 * Resolves {@code ${provider:path:key}} references in a stored connector configuration with the
 * worker's config providers ({@code config.providers} in the worker's configuration), as the herder
 * does before it hands a connector its configuration (Connect's {@code WorkerConfigTransformer}):
 * for what sharesink does with a stored configuration outside the connector, the REST extension's
 * offsets endpoints. Providers a connector configuration declares itself are dropped first, as
 * Connect drops them ({@code AbstractHerder.removeCustomConfigProviders}): only the worker decides
 * which providers exist.
 */
final class WorkerConfigProviders {

  private WorkerConfigProviders() {}

  /**
   * {@code config} with every reference the worker's providers resolve replaced by its value; a
   * configuration without references, or a worker without providers, is returned without the
   * connector's own {@code config.providers*} keys and otherwise unchanged.
   *
   * @throws ConfigException when a provider fails (the message names the provider's error, never a
   *     resolved value)
   */
  static Map<String, String> resolve(WorkerDefaults worker, Map<String, String> config) {
    Map<String, String> sanitized = new HashMap<>();
    config.forEach(
        (key, value) -> {
          if (!isProviderKey(key)) {
            sanitized.put(key, value);
          }
        });
    Map<String, String> providers = new HashMap<>();
    worker
        .settings()
        .forEach(
            (key, value) -> {
              if (isProviderKey(key)) {
                providers.put(key, value);
              }
            });
    boolean references = sanitized.values().stream().anyMatch(v -> v != null && v.contains("${"));
    if (!references || providers.isEmpty()) {
      return sanitized;
    }
    // The providers' classes are the worker's plugins: our loader's parent finds them by name.
    Map<String, ?> resolved =
        LoaderSwap.call(
            WorkerConfigProviders.class.getClassLoader(),
            () -> new AbstractConfig(new ConfigDef(), sanitized, providers, false).originals());
    Map<String, String> out = new HashMap<>();
    resolved.forEach((key, value) -> out.put(key, value == null ? null : value.toString()));
    return out;
  }

  private static boolean isProviderKey(String key) {
    return key.equals(AbstractConfig.CONFIG_PROVIDERS_CONFIG)
        || key.startsWith(AbstractConfig.CONFIG_PROVIDERS_CONFIG + ".");
  }
}
