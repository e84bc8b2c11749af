package io.sharesink.connect.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import io.sharesink.connect.ShareModeForm.InvalidForm;
import io.sharesink.connect.ShareSinkConfig;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The way in: the operator's configuration turned into the stored form ({@link
 * ShareModeForm#toStored}) for {@code POST /connectors} and {@code PUT /connectors/{c}/config}, a
 * {@code PATCH /connectors/{c}/config} translated ({@link PatchTranslation}), and a {@code PUT
 * /connector-plugins/{p}/config/validate} of the flag form answered with {@code
 * ShareSinkConnector}'s validation ({@link PluginValidation}). A stored form (what a follower
 * forwards to the leader after its own filter ran) is left as it is, so the rewrite is idempotent.
 *
 * <p>Post-matching (registered at {@link #PRIORITY}): after the worker's authentication and
 * authorization filters, so nothing here answers, reads a body or asks the herder for a caller they
 * refuse. The bodies read are bounded ({@link BoundedBody}).
 */
public class ShareModeRequestFilter implements ContainerRequestFilter {

  private static final Logger log = LoggerFactory.getLogger(ShareModeRequestFilter.class);

  /**
   * The priority the extension registers this filter with (as the JAX-RS registration's, so no
   * annotation class is needed at run time): after AUTHENTICATION (1000), AUTHORIZATION (2000) and
   * every filter that declares no priority (USER, 5000): Connect's {@code JaasBasicAuthFilter}
   * declares AUTHENTICATION from Kafka 4.4 on, but in 4.2 and 4.3 with {@code
   * javax.annotation.Priority}, which Jersey 3 does not read, so it runs at USER there; between
   * filters of the same priority Jersey's order is not defined (it changed from one application
   * build to the next).
   */
  static final int PRIORITY = Priorities.USER + 1000;

  /** Request property: the operator's connector class of a validation answered as sharesink's. */
  static final String VALIDATED_CLASS_PROPERTY = "io.sharesink.validated.class";

  /**
   * Request property: {@code Boolean.TRUE} when the configuration sent on to the runtime is in the
   * stored form (rewritten here, or forwarded so), for {@link StoredForms}.
   */
  static final String SENT_STORED_FORM_PROPERTY = "io.sharesink.sent.stored.form";

  /**
   * Request property: {@code Boolean.TRUE} for a PATCH that leaves the switch alone, so the form
   * stored stays what it was (a follower's answer, already in the operator's form, cannot tell).
   */
  static final String FORM_UNCHANGED_PROPERTY = "io.sharesink.form.unchanged";

  private final boolean workerDefaultShare;
  private final ClassResolver classes;
  private final ClusterConfigs configs;

  ShareModeRequestFilter(
      boolean workerDefaultShare, ClassResolver classes, ClusterConfigs configs) {
    this.workerDefaultShare = workerDefaultShare;
    this.classes = classes;
    this.configs = configs;
  }

  @Override
  public void filter(ContainerRequestContext request) throws IOException {
    List<String> path = RestJson.segments(request);
    String method = request.getMethod();
    boolean create = method.equals("POST") && path.equals(List.of("connectors"));
    boolean config = RestJson.isConnectorConfig(path);
    boolean put = config && method.equals("PUT");
    boolean patch = config && method.equals("PATCH");
    boolean validate = method.equals("PUT") && RestJson.isValidate(path);
    if (!create && !put && !patch && !validate) {
      return;
    }
    byte[] body;
    try {
      body = BoundedBody.read(request);
    } catch (BoundedBody.TooLarge e) {
      log.info("Refused {} /{}: {}", method, String.join("/", path), e.getMessage());
      request.abortWith(RestJson.error(413, e.getMessage()));
      return;
    }
    RestJson.setBody(request, body); // unless a rewrite below replaces it
    try {
      if (create) {
        rewriteCreate(request, body);
      } else if (put) {
        rewritePut(request, path.get(1), body);
      } else if (patch) {
        translatePatch(request, path.get(1), body);
      } else {
        validate(request, path.get(1), body);
      }
    } catch (InvalidForm e) {
      log.info("Refused {} /{}: {}", method, String.join("/", path), e.getMessage());
      request.abortWith(RestJson.error(400, e.getMessage()));
    }
  }

  private void rewriteCreate(ContainerRequestContext request, byte[] body) {
    JsonNode tree = RestJson.parse(body);
    if (!(tree instanceof ObjectNode create)) {
      return;
    }
    Optional<Map<String, String>> operator = RestJson.stringMap(create.get("config"));
    if (operator.isEmpty()) {
      return;
    }
    Map<String, String> stored = toStored(operator.get());
    markSent(request, stored);
    if (stored != operator.get()) {
      create.set("config", RestJson.MAPPER.valueToTree(stored));
      logRewrite("create", create.path("name").asText(operator.get().get("name")), stored);
      RestJson.setBody(request, RestJson.bytes(create));
    }
  }

  private void rewritePut(ContainerRequestContext request, String connector, byte[] body) {
    Optional<Map<String, String>> operator = RestJson.stringMap(body);
    if (operator.isEmpty()) {
      return;
    }
    Map<String, String> stored = toStored(operator.get());
    markSent(request, stored);
    if (stored != operator.get()) {
      logRewrite("update", connector, stored);
      RestJson.setBody(request, RestJson.bytes(stored));
    }
  }

  private void translatePatch(ContainerRequestContext request, String connector, byte[] body) {
    Optional<Map<String, String>> patch = RestJson.stringMap(body);
    if (patch.isEmpty()) {
      return; // not a map: the runtime answers it
    }
    if (!PatchTranslation.touchesSwitch(patch.get())) {
      request.setProperty(FORM_UNCHANGED_PROPERTY, Boolean.TRUE);
      return; // the same in both forms
    }
    if (PatchTranslation.isTranslated(patch.get())) {
      if (request.getUriInfo().getQueryParameters().containsKey("forward")) {
        checkForwardedPatch(request, connector, patch.get());
        return;
      }
      // Applied to the stored form as it is, such a patch could make the API show a switch
      // that is not what runs (share.internal.form.flag=classic on a connector on a share
      // group); the whole stored form can still be PUT.
      String message =
          "keys starting with "
              + PatchTranslation.INTERNAL_PREFIX
              + " are sharesink's bookkeeping, kept by its REST extension: patch connector.class"
              + " or "
              + ShareModeForm.FLAG_CONFIG
              + " instead";
      log.info("Refused PATCH of connector {}: {}", connector, message);
      request.abortWith(RestJson.error(400, message));
      return;
    }
    ClusterConfigs.Read current = configs.read(connector);
    if (current instanceof ClusterConfigs.Missing) {
      request.abortWith(RestJson.error(404, "Connector " + connector + " not found"));
      return;
    }
    if (current instanceof ClusterConfigs.Unavailable unavailable) {
      // Sent on untranslated it could store the flag form the runtime cannot run.
      abortUnreadable(
          request,
          connector,
          "apply a patch of " + ShareModeForm.FLAG_CONFIG + " or connector.class",
          unavailable);
      return;
    }
    Map<String, String> stored = ((ClusterConfigs.Found) current).config();
    Map<String, String> translated =
        PatchTranslation.translate(stored, patch.get(), workerDefaultShare, classes);
    request.setProperty(
        SENT_STORED_FORM_PROPERTY,
        ShareModeForm.isStoredForm(ShareModeForm.patched(stored, translated)));
    log.info(
        "Connector {} (patch of the switch): sent on as the patch {} of its stored form",
        connector,
        translated.keySet());
    RestJson.setBody(request, RestJson.bytes(translated));
  }

  /**
   * A patch of sharesink's bookkeeping that says it was forwarded: a follower translated it, or an
   * operator added {@code ?forward=} (a query parameter anyone can add; Connect's forwarding
   * carries no mark of its own). Either way it goes on only if what it would store keeps the
   * bookkeeping true ({@link ShareModeForm#bookkeepingProblem}), which every follower's translation
   * does; the leader reads the config from its own herder to check.
   */
  private void checkForwardedPatch(
      ContainerRequestContext request, String connector, Map<String, String> patch) {
    ClusterConfigs.Read current = configs.read(connector);
    if (current instanceof ClusterConfigs.Missing) {
      return; // Connect answers 404
    }
    if (current instanceof ClusterConfigs.Unavailable unavailable) {
      abortUnreadable(
          request,
          connector,
          "check a forwarded patch of its " + PatchTranslation.INTERNAL_PREFIX + "* keys",
          unavailable);
      return;
    }
    Map<String, String> stored = ((ClusterConfigs.Found) current).config();
    Optional<String> problem =
        ShareModeForm.bookkeepingProblem(ShareModeForm.patched(stored, patch));
    if (problem.isPresent()) {
      String message =
          "refused a patch of "
              + PatchTranslation.INTERNAL_PREFIX
              + "* keys, sharesink's bookkeeping (patch connector.class or "
              + ShareModeForm.FLAG_CONFIG
              + " instead): "
              + problem.get();
      log.info("Refused forwarded PATCH of connector {}: {}", connector, message);
      request.abortWith(RestJson.error(400, message));
    }
  }

  /**
   * Refuses a request that needs the stored config of {@code connector} when the herder cannot read
   * it; {@code purpose} says what for. A rebalance is answered as Connect answers its own requests
   * then: 409, to be retried.
   */
  private static void abortUnreadable(
      ContainerRequestContext request,
      String connector,
      String purpose,
      ClusterConfigs.Unavailable unavailable) {
    request.abortWith(
        RestJson.error(
            unavailable.rebalancing() ? 409 : 500,
            "sharesink could not read the configuration of connector "
                + connector
                + " to "
                + purpose
                + ": "
                + unavailable.reason()));
  }

  private void validate(ContainerRequestContext request, String plugin, byte[] body) {
    Optional<Map<String, String>> operator = RestJson.stringMap(body);
    if (operator.isEmpty()) {
      return;
    }
    String included = operator.get().get("connector.class");
    if (included != null && !samePlugin(included, plugin)) {
      return; // Connect refuses a body naming another class than the path, in its own words
    }
    Map<String, String> withClass = new LinkedHashMap<>(operator.get());
    withClass.putIfAbsent("connector.class", plugin);
    Map<String, String> stored = toStored(withClass);
    if (stored == withClass) {
      return;
    }
    request.setProperty(VALIDATED_CLASS_PROPERTY, withClass.get("connector.class"));
    request.abortWith(
        PluginValidation.validate(request.getUriInfo().getMatchedResources(), stored));
  }

  /**
   * Connect's test of a validation request: the body's class, without a "Connector" suffix, ends
   * with the path's (a class name and its alias both pass).
   */
  static boolean samePlugin(String included, String plugin) {
    return withoutConnectorSuffix(included.trim()).endsWith(withoutConnectorSuffix(plugin.trim()));
  }

  private static String withoutConnectorSuffix(String name) {
    String suffix = "Connector";
    return name.endsWith(suffix) && name.length() > suffix.length()
        ? name.substring(0, name.length() - suffix.length())
        : name;
  }

  /**
   * The stored form of what the operator wrote; a stored form written by hand must keep its
   * bookkeeping true ({@link ShareModeForm#bookkeepingProblem}).
   */
  private Map<String, String> toStored(Map<String, String> operator) {
    Map<String, String> stored = ShareModeForm.toStored(operator, workerDefaultShare, classes);
    Optional<String> problem = ShareModeForm.bookkeepingProblem(stored);
    if (problem.isPresent()) {
      throw new InvalidForm(problem.get());
    }
    return stored;
  }

  private static void markSent(ContainerRequestContext request, Map<String, String> sent) {
    request.setProperty(SENT_STORED_FORM_PROPERTY, ShareModeForm.isStoredForm(sent));
  }

  private static void logRewrite(String what, String connector, Map<String, String> stored) {
    log.info(
        "Connector {} ({}): {} runs through sharesink on a share group ({}={})",
        connector,
        what,
        stored.get(ShareSinkConfig.SINK_CONNECTOR_CLASS_CONFIG),
        ShareSinkConfig.FORM_CONFIG,
        stored.get(ShareSinkConfig.FORM_CONFIG));
  }
}
