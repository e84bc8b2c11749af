package io.sharesink.connect.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareSinkConfig;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way out: every answer about a connector stored from the operator's form shows that form
 * again. Connector info (create, update, patch, {@code GET /connectors/{c}}, {@code ?expand=info})
 * with its config and type {@code sink}, {@code /config}, {@code /status} and restart answers (type
 * {@code sink}), {@code /tasks} (the legacy task configs as the classic runtime would show them),
 * and validation results (the operator's class, errors on {@code share.sink.connector.class}
 * reported on {@code connector.class}). A PUT followed by a GET of the config therefore returns the
 * map that was PUT.
 *
 * <p>Answers that carry no configuration ({@code /status}, restart, {@code /tasks}, {@code
 * ?expand=status}) read the stored configuration through the herder. A failure here never breaks
 * the worker's answer: it is logged and the answer is sent unchanged.
 */
public class ShareModeResponseFilter implements ContainerResponseFilter {

  private static final Logger log = LoggerFactory.getLogger(ShareModeResponseFilter.class);

  private static final String SINK_CLASS_KEY = ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG;

  private final ClusterConfigs configs;

  ShareModeResponseFilter(ClusterConfigs configs) {
    this.configs = configs;
  }

  @Override
  public void filter(ContainerRequestContext request, ContainerResponseContext response) {
    List<String> path = RestJson.segments(request);
    String method = request.getMethod();
    boolean aConnector = path.size() >= 2 && path.get(0).equals("connectors");
    if (response.getStatus() >= 300 || !response.hasEntity()) {
      return;
    }
    try {
      JsonNode restored = null;
      if (path.equals(List.of("connectors"))) {
        if (method.equals("POST")) {
          restored = connectorInfo(tree(response));
        } else if (method.equals("GET")
            && request.getUriInfo().getQueryParameters().containsKey("expand")) {
          restored = expanded(tree(response));
        }
      } else if (path.size() == 2 && aConnector && method.equals("GET")) {
        restored = connectorInfo(tree(response));
      } else if (RestJson.isConnectorConfig(path)) {
        if (method.equals("GET")) {
          restored = config(tree(response));
        } else {
          restored = connectorInfo(tree(response)); // PUT, PATCH
        }
      } else if (path.size() == 3 && aConnector) {
        if (path.get(2).equals("status") && method.equals("GET")
            || path.get(2).equals("restart") && method.equals("POST")) {
          restored = status(tree(response), path.get(1));
        } else if (path.get(2).equals("tasks") && method.equals("GET")) {
          restored = tasks(tree(response), path.get(1));
        }
      } else if (request.getProperty(ShareModeRequestFilter.VALIDATED_CLASS_PROPERTY)
          instanceof String operatorClass) {
        restored = validation(tree(response), operatorClass);
      }
      if (restored != null) {
        response.setEntity(
            restored, response.getEntityAnnotations(), MediaType.APPLICATION_JSON_TYPE);
      }
    } catch (RuntimeException e) {
      log.warn(
          "sharesink could not show {} /{} in the operator's form; answered unchanged",
          method,
          String.join("/", path),
          e);
    }
  }

  private static JsonNode tree(ContainerResponseContext response) {
    return RestJson.MAPPER.valueToTree(response.getEntity());
  }

  /** {"name", "config", "tasks", "type"}: null when it is not a stored operator's form. */
  static JsonNode connectorInfo(JsonNode info) {
    if (!(info instanceof ObjectNode node)) {
      return null;
    }
    Optional<Map<String, String>> stored = RestJson.stringMap(node.get("config"));
    if (stored.isEmpty() || !ShareModeForm.isStoredForm(stored.get())) {
      return null;
    }
    node.set("config", RestJson.MAPPER.valueToTree(ShareModeForm.toOperator(stored.get())));
    if (node.has("type")) {
      node.put("type", "sink");
    }
    return node;
  }

  static JsonNode config(JsonNode config) {
    Optional<Map<String, String>> stored = RestJson.stringMap(config);
    if (stored.isEmpty() || !ShareModeForm.isStoredForm(stored.get())) {
      return null;
    }
    return RestJson.MAPPER.valueToTree(ShareModeForm.toOperator(stored.get()));
  }

  /**
   * A status answer: type {@code source} (ShareSinkConnector's) becomes {@code sink} for a
   * connector stored in the operator's form. Any other type needs no look-up.
   */
  private JsonNode status(JsonNode status, String connector) {
    if (!(status instanceof ObjectNode node) || !"source".equals(node.path("type").asText())) {
      return null;
    }
    if (!storedForm(connector)) {
      return null;
    }
    node.put("type", "sink");
    return node;
  }

  private JsonNode tasks(JsonNode tasks, String connector) {
    if (!(tasks instanceof ArrayNode list) || !storedForm(connector)) {
      return null;
    }
    for (JsonNode task : list) {
      if (task instanceof ObjectNode t) {
        RestJson.stringMap(t.get("config"))
            .ifPresent(
                config ->
                    t.set(
                        "config",
                        RestJson.MAPPER.valueToTree(ShareModeForm.taskToOperator(config))));
      }
    }
    return list;
  }

  private boolean storedForm(String connector) {
    return configs.read(connector) instanceof ClusterConfigs.Found found
        && ShareModeForm.isStoredForm(found.config());
  }

  /** {name: {"info": ..., "status": ...}} of {@code GET /connectors?expand=...}. */
  private JsonNode expanded(JsonNode all) {
    if (!(all instanceof ObjectNode connectors)) {
      return null;
    }
    connectors
        .fields()
        .forEachRemaining(
            entry -> {
              if (!(entry.getValue() instanceof ObjectNode expansions)) {
                return;
              }
              boolean share;
              if (expansions.get("info") instanceof ObjectNode info) {
                share = connectorInfo(info) != null;
              } else {
                share = expansions.has("status") && storedForm(entry.getKey());
              }
              if (share && expansions.get("status") instanceof ObjectNode status) {
                status.put("type", "sink");
              }
            });
    return connectors;
  }

  /**
   * A validation result ({"name", "error_count", "groups", "configs"}) of the stored form, as the
   * operator's: the operator's class as name and {@code connector.class}, the errors sharesink
   * reports on {@code share.sink.connector.class} on {@code connector.class}, and the keys the
   * operator did not write left out.
   */
  static JsonNode validation(JsonNode result, String operatorClass) {
    if (!(result instanceof ObjectNode node) || !(node.get("configs") instanceof ArrayNode)) {
      return null;
    }
    node.put("name", operatorClass);
    ArrayNode configs = (ArrayNode) node.get("configs");
    ObjectNode connectorClassValue = null;
    ArrayNode movedErrors = RestJson.MAPPER.createArrayNode();
    ArrayNode kept = RestJson.MAPPER.createArrayNode();
    for (JsonNode config : configs) {
      JsonNode value = config.path("value");
      String name = value.path("name").asText(config.path("definition").path("name").asText());
      if (name.equals(SINK_CLASS_KEY)) {
        value.path("errors").forEach(movedErrors::add);
        continue;
      }
      if (name.startsWith(PatchTranslation.INTERNAL_PREFIX)) {
        continue; // sharesink's bookkeeping, never written by the operator
      }
      if (name.equals("connector.class") && value instanceof ObjectNode v) {
        v.put("value", operatorClass);
        connectorClassValue = v;
      }
      kept.add(config);
    }
    if (!movedErrors.isEmpty() && connectorClassValue != null) {
      ArrayNode errors = connectorClassValue.withArray("errors");
      movedErrors.forEach(errors::add);
    }
    node.set("configs", kept);
    int errorCount = 0;
    for (JsonNode config : kept) {
      errorCount += config.path("value").path("errors").size();
    }
    node.put("error_count", errorCount);
    return node;
  }
}
