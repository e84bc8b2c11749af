package io.sharesink.connect.rest;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.PathSegment;
import jakarta.ws.rs.core.Response;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** JSON, paths and error answers shared by the extension's filters. */
final class RestJson {

  static final ObjectMapper MAPPER = new ObjectMapper();

  static final TypeReference<LinkedHashMap<String, String>> STRING_MAP = new TypeReference<>() {};

  private RestJson() {}

  /** The request's path segments, without empty ones ({@code /connectors/} is "connectors"). */
  static List<String> segments(ContainerRequestContext request) {
    return request.getUriInfo().getPathSegments(true).stream()
        .map(PathSegment::getPath)
        .filter(s -> !s.isEmpty())
        .toList();
  }

  static boolean isConnectorConfig(List<String> path) {
    return path.size() == 3 && path.get(0).equals("connectors") && path.get(2).equals("config");
  }

  static boolean isValidate(List<String> path) {
    return path.size() == 4
        && path.get(0).equals("connector-plugins")
        && path.get(2).equals("config")
        && path.get(3).equals("validate");
  }

  static JsonNode parse(byte[] body) {
    try {
      return body.length == 0 ? null : MAPPER.readTree(body);
    } catch (IOException e) {
      return null; // the runtime answers a body it cannot read itself
    }
  }

  /** A JSON object of strings (or nulls); empty for anything else, which the runtime refuses. */
  static Optional<Map<String, String>> stringMap(byte[] body) {
    return stringMap(parse(body));
  }

  static Optional<Map<String, String>> stringMap(JsonNode tree) {
    if (!(tree instanceof ObjectNode)) {
      return Optional.empty();
    }
    try {
      return Optional.of(MAPPER.convertValue(tree, STRING_MAP));
    } catch (IllegalArgumentException e) {
      return Optional.empty(); // nested values
    }
  }

  /** Hands the resource {@code body} in place of what was read. */
  static void setBody(ContainerRequestContext request, byte[] body) {
    request.setEntityStream(new ByteArrayInputStream(body));
    request.getHeaders().putSingle(HttpHeaders.CONTENT_LENGTH, Integer.toString(body.length));
  }

  static byte[] bytes(Object value) {
    try {
      return MAPPER.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e); // maps of strings always serialise
    }
  }

  /** An error in Connect's own shape ({@code ErrorMessage}): {"error_code", "message"}. */
  static Response error(int status, String message) {
    ObjectNode body = MAPPER.createObjectNode();
    body.put("error_code", status);
    body.put("message", message);
    return Response.status(status)
        .type(MediaType.APPLICATION_JSON_TYPE)
        .entity(new String(bytes(body), StandardCharsets.UTF_8))
        .build();
  }
}
