package io.sharesink.connect.rest;

import io.sharesink.connect.ShareSinkConfig;
import io.sharesink.connect.ShareSinkConnector;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The validation of a flag form as {@link ShareSinkConnector}'s, by the resource the request
 * matched. A request cannot be re-routed once matched (the extension's filters run after
 * authentication, so after matching), so the matched resource, Connect's {@code
 * ConnectorPluginsResource}, is called as its own PUT would call it: its public {@value #METHOD}
 * {@code (String pluginName, Map<String, String> connectorConfig)}, the same in Kafka 4.2 to 4.4.
 */
final class PluginValidation {

  private static final Logger log = LoggerFactory.getLogger(PluginValidation.class);

  static final String METHOD = "validateConfigs";

  private PluginValidation() {}

  /**
   * Connect's answer to validating {@code stored} as {@link ShareSinkConnector}. A failure of the
   * call is thrown as Connect's own resource throws it, so Connect's exception mapper answers it as
   * it would that call; a checked exception is answered as that mapper answers one (500 with its
   * message). Without a resource to call, a 501 that names the explicit form.
   */
  static Response validate(List<Object> matchedResources, Map<String, String> stored) {
    for (Object resource : matchedResources) {
      Method method;
      try {
        method = resource.getClass().getMethod(METHOD, String.class, Map.class);
      } catch (NoSuchMethodException e) {
        continue;
      }
      Object result;
      try {
        result = method.invoke(resource, ShareSinkConnector.class.getName(), stored);
      } catch (IllegalAccessException | IllegalArgumentException e) {
        return unavailable(resource.getClass().getName() + "." + METHOD + ": " + e);
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause();
        if (cause instanceof RuntimeException runtime) {
          throw runtime;
        }
        if (cause instanceof Error error) {
          throw error;
        }
        return RestJson.error(500, cause.getMessage());
      }
      return Response.ok(result, MediaType.APPLICATION_JSON_TYPE).build();
    }
    return unavailable(
        "no matched resource has "
            + METHOD
            + "(String, Map) (resources: "
            + matchedResources
            + ")");
  }

  private static Response unavailable(String why) {
    log.warn("sharesink cannot validate the flag form on this worker: {}", why);
    return RestJson.error(
        501,
        "sharesink's REST extension cannot validate consumer.override.group.protocol=share on this"
            + " worker ("
            + why
            + "). Validate the explicit form instead: connector.class="
            + ShareSinkConnector.class.getName()
            + " with "
            + ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG
            + "=<the sink's class>, at /connector-plugins/"
            + ShareSinkConnector.class.getName()
            + "/config/validate");
  }
}
