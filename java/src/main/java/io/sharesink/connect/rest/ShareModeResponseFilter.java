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
import java.util.ArrayList;
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
 * <p>Answers that carry no configuration ({@code /status}, restart, {@code ?expand=status}) ask
 * {@link StoredForms}, which this filter feeds with every configuration it sees. A failure here
 * never breaks the worker's answer: it is logged and the answer is sent unchanged.
 */
public class ShareModeResponseFilter implements ContainerResponseFilter {

  private static final Logger log = LoggerFactory.getLogger(ShareModeResponseFilter.class);

  private static final String SINK_CLASS_KEY = ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG;

  private final StoredForms forms;

  ShareModeResponseFilter(StoredForms forms) {
    this.forms = forms;
  }

  @Override
  public void filter(ContainerRequestContext request, ContainerResponseContext response) {
    List<String> path = RestJson.segments(request);
    String method = request.getMethod();
    boolean aConnector = path.size() >= 2 && path.get(0).equals("connectors");
    if (aConnector
        && (response.getStatus() == 404 || method.equals("DELETE") && path.size() == 2)) {
      forms.forget(path.get(1));
    }
    if (response.getStatus() >= 300 || !response.hasEntity()) {
      return;
    }
    try {
      JsonNode restored = null;
      if (path.equals(List.of("connectors"))) {
        if (method.equals("POST")) {
          restored = written(request, tree(response), null);
        } else if (method.equals("GET")
            && request.getUriInfo().getQueryParameters().containsKey("expand")) {
          restored = expanded(tree(response));
        }
      } else if (path.size() == 2 && aConnector && method.equals("GET")) {
        restored = read(path.get(1), tree(response));
      } else if (RestJson.isConnectorConfig(path)) {
        if (method.equals("GET")) {
          restored = config(path.get(1), tree(response));
        } else {
          restored = written(request, tree(response), path.get(1)); // PUT, PATCH
        }
      } else if (path.size() == 3 && aConnector) {
        if (path.get(2).equals("status") && method.equals("GET")
            || path.get(2).equals("restart") && method.equals("POST")) {
          restored = status(tree(response), path.get(1));
        } else if (path.get(2).equals("tasks") && method.equals("GET")) {
          restored = tasks(tree(response));
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

  /**
   * The answer to a create, PUT or PATCH. A follower passes on the leader's answer, restored
   * already, so a config not in the stored form says nothing unless this worker sent the stored
   * form on, or the request was a PATCH that left the form as it was (then what was known stays).
   */
  private JsonNode written(ContainerRequestContext request, JsonNode info, String connector) {
    String name = connector != null ? connector : info.path("name").asText(null);
    Optional<Map<String, String>> stored = RestJson.stringMap(info.get("config"));
    if (name != null && stored.isPresent()) {
      if (ShareModeForm.isStoredForm(stored.get())
          || Boolean.TRUE.equals(
              request.getProperty(ShareModeRequestFilter.SENT_STORED_FORM_PROPERTY))) {
        forms.record(name, true);
      } else if (!Boolean.TRUE.equals(
          request.getProperty(ShareModeRequestFilter.FORM_UNCHANGED_PROPERTY))) {
        forms.forget(name);
      }
    }
    return connectorInfo(info);
  }

  /** {@code GET /connectors/{c}}: answered from this worker's own view of the config topic. */
  private JsonNode read(String connector, JsonNode info) {
    RestJson.stringMap(info.get("config")).ifPresent(stored -> forms.record(connector, stored));
    return connectorInfo(info);
  }

  private JsonNode config(String connector, JsonNode config) {
    RestJson.stringMap(config).ifPresent(stored -> forms.record(connector, stored));
    return config(config);
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
   * A status answer: its type becomes {@code sink} for a connector stored in the operator's form.
   * Type {@code sink} needs no look-up (ShareSinkConnector is a source connector); {@code source},
   * or {@code unknown} (Connect's config snapshot lacks the connector, e.g. right after a worker
   * start), does.
   */
  private JsonNode status(JsonNode status, String connector) {
    if (!(status instanceof ObjectNode node) || !mayBeShareSink(node)) {
      return null;
    }
    if (!Boolean.TRUE.equals(forms.operatorForms(List.of(connector)).get(connector))) {
      return null;
    }
    node.put("type", "sink");
    return node;
  }

  private static boolean mayBeShareSink(ObjectNode status) {
    return status.has("type") && !"sink".equals(status.path("type").asText());
  }

  /**
   * Task configs of a connector stored in the operator's form carry sharesink's keys (the
   * connector's {@code share.*} keys are copied into each), so each tells for itself.
   */
  static JsonNode tasks(JsonNode tasks) {
    if (!(tasks instanceof ArrayNode list)) {
      return null;
    }
    boolean any = false;
    for (JsonNode task : list) {
      if (task instanceof ObjectNode t) {
        Optional<Map<String, String>> config = RestJson.stringMap(t.get("config"));
        if (config.isPresent()
            && config.get().containsKey(ShareSinkConfig.FORM_CONFIG)
            && config.get().containsKey(ShareSinkConfig.SINK_TASK_CLASS_CONFIG)) {
          t.set("config", RestJson.MAPPER.valueToTree(ShareModeForm.taskToOperator(config.get())));
          any = true;
        }
      }
    }
    return any ? list : null;
  }

  /** {name: {"info": ..., "status": ...}} of {@code GET /connectors?expand=...}. */
  private JsonNode expanded(JsonNode all) {
    if (!(all instanceof ObjectNode connectors)) {
      return null;
    }
    List<String> unknown = new ArrayList<>();
    connectors
        .fields()
        .forEachRemaining(
            entry -> {
              if (!(entry.getValue() instanceof ObjectNode expansions)) {
                return;
              }
              if (expansions.get("info") instanceof ObjectNode info) {
                RestJson.stringMap(info.get("config"))
                    .ifPresent(stored -> forms.record(entry.getKey(), stored));
                if (connectorInfo(info) != null
                    && expansions.get("status") instanceof ObjectNode status) {
                  status.put("type", "sink");
                }
              } else if (expansions.get("status") instanceof ObjectNode status
                  && mayBeShareSink(status)) {
                unknown.add(entry.getKey());
              }
            });
    if (!unknown.isEmpty()) {
      Map<String, Boolean> known = forms.operatorForms(unknown);
      for (String connector : unknown) {
        if (Boolean.TRUE.equals(known.get(connector))) {
          ((ObjectNode) connectors.get(connector).get("status")).put("type", "sink");
        }
      }
    }
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
