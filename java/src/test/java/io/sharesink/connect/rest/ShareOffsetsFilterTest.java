package io.sharesink.connect.rest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.jakarta.rs.json.JacksonJsonProvider;
import io.sharesink.connect.ConnectorShareGroup;
import io.sharesink.connect.ShareSinkConnector;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.connect.errors.ConnectException;
import org.glassfish.jersey.internal.MapPropertiesDelegate;
import org.glassfish.jersey.server.ApplicationHandler;
import org.glassfish.jersey.server.ContainerRequest;
import org.glassfish.jersey.server.ContainerResponse;
import org.glassfish.jersey.server.ResourceConfig;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The offsets endpoints of a share-mode connector, in Jersey in memory in front of a stand-in for
 * Connect's resource (which answers the runtime's silent 200): each request reaches the share
 * group, or is refused with a 4xx, and never the runtime's answer; a classic connector's requests
 * reach the runtime; an authentication filter runs first.
 */
class ShareOffsetsFilterTest {

  static final List<String> RUNTIME_SAW = new ArrayList<>();

  /** Connect's ConnectorsResource offsets endpoints, as they answer for a source connector. */
  @Path("/connectors/{c}/offsets")
  @Produces(MediaType.APPLICATION_JSON)
  @Consumes(MediaType.APPLICATION_JSON)
  public static class RuntimeOffsets {
    @GET
    public Map<String, Object> get(@PathParam("c") String c) {
      RUNTIME_SAW.add("GET " + c);
      return Map.of("offsets", List.of());
    }

    @PATCH
    public Map<String, String> patch(@PathParam("c") String c, Map<String, Object> body) {
      RUNTIME_SAW.add("PATCH " + c);
      return Map.of("message", "The offsets for this connector have been altered successfully");
    }

    @DELETE
    public Map<String, String> delete(@PathParam("c") String c) {
      RUNTIME_SAW.add("DELETE " + c);
      return Map.of("message", "The offsets for this connector have been reset successfully");
    }
  }

  /** The share group, in memory. */
  final class FakeGroup implements ShareOffsetsFilter.GroupOffsets {
    @Override
    public Map<TopicPartition, ConnectorShareGroup.Position> positions() {
      Map<TopicPartition, ConnectorShareGroup.Position> out = new LinkedHashMap<>();
      offsets.forEach((tp, o) -> out.put(tp, new ConnectorShareGroup.Position(o, 3L)));
      return out;
    }

    @Override
    public void alterStartOffsets(Map<TopicPartition, Long> changes) {
      if (members) {
        throw new ConnectException("alter failed", new GroupNotEmptyException("members"));
      }
      changes.forEach((tp, o) -> offsets.put(tp, o == null ? 0L : o));
    }

    @Override
    public Map<TopicPartition, Long> resetStartOffsets() {
      offsets.replaceAll((tp, o) -> 0L);
      return offsets;
    }
  }

  final Map<String, Map<String, String>> stored = new HashMap<>();
  final Map<String, String> states = new HashMap<>();
  final Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
  final List<String> groupsOpened = new ArrayList<>();
  boolean members;
  ApplicationHandler app;

  @BeforeEach
  void start() {
    RUNTIME_SAW.clear();
    stored.put(
        "share",
        Map.of(
            "connector.class", ShareSinkConnector.class.getName(),
            "share.sink.connector.class", "FileStreamSink",
            "topics", "orders"));
    stored.put("classic", Map.of("connector.class", "FileStreamSink", "topics", "orders"));
    states.put("share", "RUNNING");
    offsets.put(new TopicPartition("orders", 0), 40L);
    offsets.put(new TopicPartition("orders", 1), 7L);
    ResourceConfig resources = new ResourceConfig();
    resources.register(new JacksonJsonProvider());
    resources.register(new RuntimeOffsets());
    // An authentication filter as Connect's basic-auth extension registers it.
    resources.register(
        (ContainerRequestFilter)
            request -> {
              if (!"Basic ok".equals(request.getHeaderString("Authorization"))) {
                request.abortWith(Response.status(401).build());
              }
            },
        Priorities.AUTHENTICATION);
    resources.register(
        new ShareOffsetsFilter(
            name -> Optional.ofNullable(stored.get(name)),
            name -> Optional.ofNullable(states.get(name)),
            (name, config) -> {
              groupsOpened.add(name);
              return new FakeGroup();
            }),
        ShareModeRequestFilter.PRIORITY);
    app = new ApplicationHandler(resources);
  }

  record Answer(int status, JsonNode body) {}

  private Answer call(String method, String path, String body, boolean authenticated)
      throws Exception {
    ContainerRequest request =
        new ContainerRequest(
            URI.create("http://127.0.0.1:8083/"),
            URI.create("http://127.0.0.1:8083" + path),
            method,
            null,
            new MapPropertiesDelegate(),
            app.getConfiguration());
    request.getHeaders().putSingle("Accept", MediaType.APPLICATION_JSON);
    if (authenticated) {
      request.getHeaders().putSingle("Authorization", "Basic ok");
    }
    if (body != null) {
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      request.getHeaders().putSingle("Content-Type", MediaType.APPLICATION_JSON);
      request.setEntityStream(new ByteArrayInputStream(bytes));
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ContainerResponse response = app.apply(request, out).get();
    String text = out.toString(StandardCharsets.UTF_8);
    return new Answer(response.getStatus(), text.isEmpty() ? null : RestJson.MAPPER.readTree(text));
  }

  private Answer call(String method, String path, String body) throws Exception {
    return call(method, path, body, true);
  }

  @Test
  void getShowsTheShareGroupsStartOffsetsInConnectsSinkForm() throws Exception {
    Answer a = call("GET", "/connectors/share/offsets", null);
    assertEquals(200, a.status());
    assertEquals(
        RestJson.MAPPER.readTree(
            "{\"offsets\":[{\"partition\":{\"kafka_topic\":\"orders\",\"kafka_partition\":0},"
                + "\"offset\":{\"kafka_offset\":40,\"share_lag\":3}},{\"partition\":{\"kafka_topic\":\"orders\","
                + "\"kafka_partition\":1},\"offset\":{\"kafka_offset\":7,\"share_lag\":3}}]}"),
        a.body());
    assertEquals(List.of(), RUNTIME_SAW, "the runtime's empty answer was not sent");
  }

  @Test
  void patchAndDeleteNeedTheConnectorStoppedAsConnectDoes() throws Exception {
    String patch =
        "{\"offsets\":[{\"partition\":{\"kafka_topic\":\"orders\",\"kafka_partition\":0},"
            + "\"offset\":{\"kafka_offset\":5}}]}";
    Answer running = call("PATCH", "/connectors/share/offsets", patch);
    assertEquals(400, running.status());
    assertTrue(running.body().get("message").asText().contains("STOPPED"), running.toString());
    assertEquals(400, call("DELETE", "/connectors/share/offsets", null).status());
    assertEquals(40L, offsets.get(new TopicPartition("orders", 0)), "nothing changed");

    states.put("share", "STOPPED");
    Answer altered = call("PATCH", "/connectors/share/offsets", patch);
    assertEquals(200, altered.status(), altered.toString());
    assertEquals(5L, offsets.get(new TopicPartition("orders", 0)));
    assertEquals(7L, offsets.get(new TopicPartition("orders", 1)));
    Answer reset = call("DELETE", "/connectors/share/offsets", null);
    assertEquals(200, reset.status(), reset.toString());
    assertEquals(
        "The offsets for this connector have been reset successfully",
        reset.body().get("message").asText());
    assertEquals(List.of(0L, 0L), List.copyOf(offsets.values()));
    assertEquals(List.of(), RUNTIME_SAW);
  }

  @Test
  void aGroupWithMembersIsAConflictNotASilentSuccess() throws Exception {
    states.put("share", "STOPPED");
    members = true;
    Answer a =
        call(
            "PATCH",
            "/connectors/share/offsets",
            "{\"offsets\":[{\"partition\":{\"kafka_topic\":\"orders\",\"kafka_partition\":0},"
                + "\"offset\":null}]}");
    assertEquals(409, a.status(), a.toString());
    assertTrue(a.body().get("message").asText().contains("still has members"), a.toString());
  }

  @Test
  void malformedBodiesAreRefusedNamingWhatIsMissing() throws Exception {
    states.put("share", "STOPPED");
    for (String body :
        List.of(
            "{}",
            "{\"offsets\":[]}",
            "not json",
            "{\"offsets\":[{\"partition\":{\"kafka_topic\":\"orders\"},\"offset\":null}]}",
            "{\"offsets\":[{\"partition\":{\"kafka_topic\":\"orders\",\"kafka_partition\":0},"
                + "\"offset\":{\"kafka_offset\":-1}}]}")) {
      Answer a = call("PATCH", "/connectors/share/offsets", body);
      assertEquals(400, a.status(), body + " -> " + a);
    }
    String huge = "{\"offsets\":[" + " ".repeat(BoundedBody.MAX_BYTES) + "]}";
    assertEquals(413, call("PATCH", "/connectors/share/offsets", huge).status());
    assertEquals(40L, offsets.get(new TopicPartition("orders", 0)));
  }

  @Test
  void classicConnectorsAndUnknownOnesAreTheRuntimes() throws Exception {
    assertEquals(200, call("GET", "/connectors/classic/offsets", null).status());
    assertEquals(200, call("DELETE", "/connectors/nobody/offsets", null).status());
    assertEquals(List.of("GET classic", "DELETE nobody"), RUNTIME_SAW);
    assertEquals(List.of(), groupsOpened);
  }

  @Test
  void authenticationRunsFirst() throws Exception {
    String huge = " ".repeat(BoundedBody.MAX_BYTES + 10);
    for (String method : List.of("GET", "PATCH", "DELETE")) {
      Answer a =
          call(method, "/connectors/share/offsets", method.equals("PATCH") ? huge : null, false);
      assertEquals(401, a.status(), method);
    }
    assertEquals(List.of(), groupsOpened, "nothing of ours ran for an unauthenticated caller");
    assertEquals(List.of(), RUNTIME_SAW);
  }
}
