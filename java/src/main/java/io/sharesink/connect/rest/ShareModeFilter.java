package io.sharesink.connect.rest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import io.sharesink.connect.ShareModeForm.InvalidForm;
import io.sharesink.connect.ShareSinkConfig;
import io.sharesink.connect.ShareSinkConnector;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.container.ContainerResponseContext;
import jakarta.ws.rs.container.ContainerResponseFilter;
import jakarta.ws.rs.container.PreMatching;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.PathSegment;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JAX-RS filters of {@link ShareModeRestExtension}.
 *
 * <p><b>On the way in</b> (pre-matching, so a request can be re-routed): {@code POST /connectors},
 * {@code PUT /connectors/{c}/config} and {@code PUT /connector-plugins/{p}/config/validate} have
 * the operator's configuration turned into the stored form ({@link ShareModeForm#toStored}); a
 * {@code PATCH /connectors/{c}/config} is applied here to the operator's form of the stored
 * configuration and sent on as the {@code PUT} of the result, so a patch that removes the switch
 * moves the connector back to the classic runtime. A stored form (what a follower forwards to the
 * leader after its own filter ran) is left as it is, so the rewrite is idempotent.
 *
 * <p><b>On the way out</b>, every answer about a connector stored from the operator's form shows
 * that form again: connector info (create, update, {@code GET /connectors/{c}}, {@code
 * ?expand=info}) with its config and type {@code sink}, {@code /config}, {@code /status} and
 * restart answers (type {@code sink}), {@code /tasks} (the legacy task configs as the classic
 * runtime would show them), and validation results (the operator's class, errors on {@code
 * share.sink.connector.class} reported on {@code connector.class}). A PUT followed by a GET of the
 * config therefore returns the map that was PUT. A failure here never breaks the worker's answer:
 * it is logged and the answer is sent unchanged.
 */
@PreMatching
public class ShareModeFilter implements ContainerRequestFilter, ContainerResponseFilter {

  private static final Logger log = LoggerFactory.getLogger(ShareModeFilter.class);

  static final ObjectMapper MAPPER = new ObjectMapper();

  private static final TypeReference<LinkedHashMap<String, String>> STRING_MAP =
      new TypeReference<>() {};

  /** Request property: the operator's connector class of a validation we re-routed. */
  static final String VALIDATED_CLASS_PROPERTY = "io.sharesink.validated.class";

  private static final String SINK_CLASS_KEY = ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG;
  private static final String FORM_KEY = ShareSinkConfig.FORM_CONFIG;
  private static final String INTERNAL_PREFIX = "share.internal.";

  private final boolean workerDefaultShare;
  private final ClassResolver classes;
  private final ClusterConfigs configs;

  ShareModeFilter(boolean workerDefaultShare, ClassResolver classes, ClusterConfigs configs) {
    this.workerDefaultShare = workerDefaultShare;
    this.classes = classes;
    this.configs = configs;
  }

  // ------------------------------------------------------------------------------------------
  // requests

  @Override
  public void filter(ContainerRequestContext request) throws IOException {
    List<String> path = segments(request);
    String method = request.getMethod();
    try {
      if (method.equals("POST") && path.equals(List.of("connectors"))) {
        rewriteCreate(request);
      } else if (isConnectorConfig(path) && method.equals("PUT")) {
        rewritePut(request, path.get(1));
      } else if (isConnectorConfig(path) && method.equals("PATCH")) {
        rewritePatch(request, path.get(1));
      } else if (method.equals("PUT") && isValidate(path)) {
        rewriteValidate(request, path.get(1));
      }
    } catch (InvalidForm e) {
      log.info("Refused {} /{}: {}", method, String.join("/", path), e.getMessage());
      request.abortWith(error(Response.Status.BAD_REQUEST, e.getMessage()));
    }
  }

  private void rewriteCreate(ContainerRequestContext request) throws IOException {
    byte[] body = request.getEntityStream().readAllBytes();
    JsonNode tree = parse(body);
    if (!(tree instanceof ObjectNode create) || !(create.get("config") instanceof ObjectNode)) {
      setBody(request, body);
      return;
    }
    Map<String, String> operator = MAPPER.convertValue(create.get("config"), STRING_MAP);
    Map<String, String> stored = toStored(operator);
    if (stored == operator) {
      setBody(request, body);
      return;
    }
    create.set("config", MAPPER.valueToTree(stored));
    logRewrite("create", create.path("name").asText(operator.get("name")), stored);
    setBody(request, MAPPER.writeValueAsBytes(create));
  }

  private void rewritePut(ContainerRequestContext request, String connector) throws IOException {
    byte[] body = request.getEntityStream().readAllBytes();
    Optional<Map<String, String>> operator = stringMap(body);
    if (operator.isEmpty()) {
      setBody(request, body);
      return;
    }
    Map<String, String> stored = toStored(operator.get());
    if (stored == operator.get()) {
      setBody(request, body);
      return;
    }
    logRewrite("update", connector, stored);
    setBody(request, MAPPER.writeValueAsBytes(stored));
  }

  private void rewritePatch(ContainerRequestContext request, String connector) throws IOException {
    byte[] body = request.getEntityStream().readAllBytes();
    Optional<Map<String, String>> patch = stringMap(body);
    Optional<Map<String, String>> current =
        patch.isEmpty() ? Optional.empty() : configs.stored(connector);
    if (current.isEmpty()) {
      // Not a map, or no such connector (the runtime answers 404): the runtime's own PATCH.
      setBody(request, body);
      return;
    }
    Map<String, String> operator =
        ShareModeForm.patched(ShareModeForm.toOperator(current.get()), patch.get());
    Map<String, String> stored = toStored(operator);
    if (!ShareModeForm.isStoredForm(current.get()) && stored == operator) {
      setBody(request, body); // neither before nor after in the operator's share form
      return;
    }
    // The patch applied to what the operator sees, stored whole: a PUT of an existing connector.
    request.setMethod("PUT");
    logRewrite(
        stored == operator ? "patch back to the classic runtime" : "patch", connector, stored);
    setBody(request, MAPPER.writeValueAsBytes(stored));
  }

  private void rewriteValidate(ContainerRequestContext request, String plugin) throws IOException {
    byte[] body = request.getEntityStream().readAllBytes();
    Optional<Map<String, String>> operator = stringMap(body);
    if (operator.isEmpty()) {
      setBody(request, body);
      return;
    }
    Map<String, String> withClass = new LinkedHashMap<>(operator.get());
    withClass.putIfAbsent("connector.class", plugin);
    Map<String, String> stored = toStored(withClass);
    if (stored == withClass) {
      setBody(request, body);
      return;
    }
    request.setProperty(VALIDATED_CLASS_PROPERTY, withClass.get("connector.class"));
    URI target =
        UriBuilder.fromUri(request.getUriInfo().getRequestUri())
            .replacePath("/connector-plugins/" + ShareSinkConnector.class.getName())
            .path("config/validate")
            .build();
    request.setRequestUri(request.getUriInfo().getBaseUri(), target);
    setBody(request, MAPPER.writeValueAsBytes(stored));
  }

  private Map<String, String> toStored(Map<String, String> operator) {
    return ShareModeForm.toStored(operator, workerDefaultShare, classes);
  }

  private static void logRewrite(String what, String connector, Map<String, String> stored) {
    log.info(
        "Connector {} ({}): {} runs through sharesink on a share group ({}={})",
        connector,
        what,
        stored.get(SINK_CLASS_KEY),
        FORM_KEY,
        stored.get(FORM_KEY));
  }

  // ------------------------------------------------------------------------------------------
  // responses

  @Override
  public void filter(ContainerRequestContext request, ContainerResponseContext response) {
    if (response.getStatus() >= 300 || !response.hasEntity()) {
      return;
    }
    List<String> path = segments(request);
    String method = request.getMethod();
    try {
      JsonNode restored = null;
      if (path.equals(List.of("connectors"))) {
        if (method.equals("POST")) {
          restored = connectorInfo(tree(response));
        } else if (method.equals("GET")
            && request.getUriInfo().getQueryParameters().containsKey("expand")) {
          restored = expanded(tree(response));
        }
      } else if (path.size() == 2 && path.get(0).equals("connectors") && method.equals("GET")) {
        restored = connectorInfo(tree(response));
      } else if (isConnectorConfig(path)) {
        if (method.equals("GET")) {
          restored = config(tree(response));
        } else {
          restored = connectorInfo(tree(response)); // PUT (and PATCH sent on as PUT)
        }
      } else if (path.size() == 3 && path.get(0).equals("connectors")) {
        String connector = path.get(1);
        if (path.get(2).equals("status") && method.equals("GET")
            || path.get(2).equals("restart") && method.equals("POST")) {
          restored = status(tree(response), connector);
        } else if (path.get(2).equals("tasks") && method.equals("GET")) {
          restored = tasks(tree(response), connector);
        }
      } else if (request.getProperty(VALIDATED_CLASS_PROPERTY) instanceof String operatorClass) {
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
    return MAPPER.valueToTree(response.getEntity());
  }

  /** {"name", "config", "tasks", "type"}: null when it is not a stored operator's form. */
  static JsonNode connectorInfo(JsonNode info) {
    if (!(info instanceof ObjectNode node) || !(node.get("config") instanceof ObjectNode)) {
      return null;
    }
    Map<String, String> stored = MAPPER.convertValue(node.get("config"), STRING_MAP);
    if (!ShareModeForm.isStoredForm(stored)) {
      return null;
    }
    node.set("config", MAPPER.valueToTree(ShareModeForm.toOperator(stored)));
    if (node.has("type")) {
      node.put("type", "sink");
    }
    return node;
  }

  static JsonNode config(JsonNode config) {
    if (!(config instanceof ObjectNode)) {
      return null;
    }
    Map<String, String> stored = MAPPER.convertValue(config, STRING_MAP);
    if (!ShareModeForm.isStoredForm(stored)) {
      return null;
    }
    return MAPPER.valueToTree(ShareModeForm.toOperator(stored));
  }

  private JsonNode status(JsonNode status, String connector) {
    if (!(status instanceof ObjectNode node) || !node.has("type")) {
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
      if (task instanceof ObjectNode t && t.get("config") instanceof ObjectNode) {
        Map<String, String> config = MAPPER.convertValue(t.get("config"), STRING_MAP);
        t.set("config", MAPPER.valueToTree(ShareModeForm.taskToOperator(config)));
      }
    }
    return list;
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
              JsonNode info = expansions.get("info");
              if (info != null) {
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
    ArrayNode movedErrors = MAPPER.createArrayNode();
    ArrayNode kept = MAPPER.createArrayNode();
    for (JsonNode config : configs) {
      JsonNode value = config.path("value");
      String name = value.path("name").asText(config.path("definition").path("name").asText());
      if (name.equals(SINK_CLASS_KEY)) {
        value.path("errors").forEach(movedErrors::add);
        continue;
      }
      if (name.startsWith(INTERNAL_PREFIX)) {
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

  private boolean storedForm(String connector) {
    return configs.stored(connector).map(ShareModeForm::isStoredForm).orElse(false);
  }

  // ------------------------------------------------------------------------------------------
  // helpers

  private static List<String> segments(ContainerRequestContext request) {
    return request.getUriInfo().getPathSegments(true).stream()
        .map(PathSegment::getPath)
        .filter(s -> !s.isEmpty())
        .toList();
  }

  private static boolean isConnectorConfig(List<String> path) {
    return path.size() == 3 && path.get(0).equals("connectors") && path.get(2).equals("config");
  }

  private static boolean isValidate(List<String> path) {
    return path.size() == 4
        && path.get(0).equals("connector-plugins")
        && path.get(2).equals("config")
        && path.get(3).equals("validate");
  }

  private static JsonNode parse(byte[] body) {
    try {
      return body.length == 0 ? null : MAPPER.readTree(body);
    } catch (IOException e) {
      return null; // the runtime answers a body it cannot read itself
    }
  }

  private static Optional<Map<String, String>> stringMap(byte[] body) {
    JsonNode tree = parse(body);
    if (!(tree instanceof ObjectNode)) {
      return Optional.empty();
    }
    try {
      return Optional.of(MAPPER.convertValue(tree, STRING_MAP));
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // nested values: the runtime refuses them itself
    }
  }

  private static void setBody(ContainerRequestContext request, byte[] body) {
    request.setEntityStream(new ByteArrayInputStream(body));
    request.getHeaders().putSingle(HttpHeaders.CONTENT_LENGTH, Integer.toString(body.length));
  }

  private static Response error(Response.Status status, String message) {
    ObjectNode body = MAPPER.createObjectNode();
    body.put("error_code", status.getStatusCode());
    body.put("message", message);
    try {
      return Response.status(status)
          .type(MediaType.APPLICATION_JSON_TYPE)
          .entity(new String(MAPPER.writeValueAsBytes(body), StandardCharsets.UTF_8))
          .build();
    } catch (JsonProcessingException e) {
      return Response.status(status).entity(message).build();
    }
  }
}
