package io.sharesink.connect.rest;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sharesink.connect.ConnectorShareGroup;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.health.ConnectClusterState;
import org.apache.kafka.connect.health.ConnectorHealth;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Connect's offsets endpoints (KIP-875: {@code GET}, {@code PATCH} and {@code DELETE
 * /connectors/{c}/offsets}) for a connector that runs through sharesink, in either form. To the
 * runtime such a connector is a source connector with no source offsets, so it would answer {@code
 * 200} and do nothing; here each one means for the share group what it means for a sink connector's
 * consumer group, in the same JSON:
 *
 * <ul>
 *   <li>{@code GET}: per partition of the share group ({@code kafka_topic}, {@code
 *       kafka_partition}) an offset below which every record is done ({@code kafka_offset}) and how
 *       many at or above it are not ({@code share_lag}), see {@link
 *       ConnectorShareGroup#positions()};
 *   <li>{@code PATCH}: sets start offsets; a {@code null} offset resets its partition to where
 *       {@code share.auto.offset.reset} starts it;
 *   <li>{@code DELETE}: resets every partition the group has state for that way.
 * </ul>
 *
 * <p>{@code PATCH} and {@code DELETE} need the connector {@code STOPPED}, as Connect requires, and
 * the group empty. The calls use the connector's own admin settings under the worker's override
 * policy ({@link ConnectorShareGroup}). Registered post-matching at {@link
 * ShareModeRequestFilter#PRIORITY}: authentication and authorization filters have run before
 * anything here; the {@code PATCH} body is bounded as the other requests' ({@link BoundedBody}).
 */
public class ShareOffsetsFilter implements ContainerRequestFilter {

  private static final Logger log = LoggerFactory.getLogger(ShareOffsetsFilter.class);

  static final String KAFKA_TOPIC = "kafka_topic";
  static final String KAFKA_PARTITION = "kafka_partition";
  static final String KAFKA_OFFSET = "kafka_offset";
  static final String SHARE_LAG = "share_lag";

  /** The share-group operations of one connector; a seam for tests. */
  public interface GroupOffsets {
    Map<TopicPartition, ConnectorShareGroup.Position> positions();

    void alterStartOffsets(Map<TopicPartition, Long> offsets);

    Map<TopicPartition, Long> resetStartOffsets();
  }

  private final Function<String, Optional<Map<String, String>>> storedConfigs;
  private final Function<String, Optional<String>> connectorStates;
  private final BiFunction<String, Map<String, String>, GroupOffsets> groups;

  ShareOffsetsFilter(ClusterConfigs configs, ConnectClusterState state) {
    this(configs::stored, name -> connectorState(state, name), ShareOffsetsFilter::realGroup);
  }

  ShareOffsetsFilter(
      Function<String, Optional<Map<String, String>>> storedConfigs,
      Function<String, Optional<String>> connectorStates,
      BiFunction<String, Map<String, String>, GroupOffsets> groups) {
    this.storedConfigs = storedConfigs;
    this.connectorStates = connectorStates;
    this.groups = groups;
  }

  private static GroupOffsets realGroup(String name, Map<String, String> stored) {
    ConnectorShareGroup group = ConnectorShareGroup.of(name, stored);
    return new GroupOffsets() {
      @Override
      public Map<TopicPartition, ConnectorShareGroup.Position> positions() {
        return group.positions();
      }

      @Override
      public void alterStartOffsets(Map<TopicPartition, Long> offsets) {
        group.alterStartOffsets(offsets);
      }

      @Override
      public Map<TopicPartition, Long> resetStartOffsets() {
        return group.resetStartOffsets();
      }
    };
  }

  private static Optional<String> connectorState(ConnectClusterState state, String name) {
    try {
      ConnectorHealth health = state.connectorHealth(name);
      return Optional.ofNullable(health.connectorState().state());
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  @Override
  public void filter(ContainerRequestContext request) throws IOException {
    List<String> path = RestJson.segments(request);
    String method = request.getMethod();
    if (path.size() != 3
        || !path.get(0).equals("connectors")
        || !path.get(2).equals("offsets")
        || !List.of("GET", "PATCH", "DELETE").contains(method)) {
      return;
    }
    String name = path.get(1);
    Optional<Map<String, String>> stored = storedConfigs.apply(name);
    if (stored.isEmpty() || !ConnectorShareGroup.runsInShareMode(stored.get())) {
      return; // no such connector (the runtime answers 404), or a classic one: the runtime's
    }
    try {
      request.abortWith(answer(request, method, name, stored.get()));
    } catch (RefusedRequest e) {
      log.info("Refused {} /connectors/{}/offsets: {}", method, name, e.getMessage());
      request.abortWith(error(e.status, e.getMessage()));
    } catch (ConfigException | ConnectException e) {
      if (causedBy(e, GroupNotEmptyException.class)) {
        request.abortWith(
            error(
                409,
                "the share group of connector "
                    + name
                    + " still has members: the stopped connector's tasks leave it within seconds,"
                    + " or another application shares the group; try again once it is empty"));
        return;
      }
      log.warn("{} /connectors/{}/offsets failed", method, name, e);
      request.abortWith(
          error(
              e instanceof ConfigException ? 400 : 500,
              "share group of connector " + name + ": " + e.getMessage()));
    }
  }

  private Response answer(
      ContainerRequestContext request, String method, String name, Map<String, String> stored)
      throws IOException {
    switch (method) {
      case "GET":
        return ok(offsetsJson(groups.apply(name, stored).positions()));
      case "DELETE":
        requireStopped(name);
        Map<TopicPartition, Long> reset = groups.apply(name, stored).resetStartOffsets();
        log.info("Connector {}: share group start offsets reset to {}", name, reset);
        return ok(message("The offsets for this connector have been reset successfully"));
      default:
        Map<TopicPartition, Long> offsets = parseOffsets(readBody(request));
        requireStopped(name);
        groups.apply(name, stored).alterStartOffsets(offsets);
        log.info("Connector {}: share group start offsets set to {}", name, offsets);
        return ok(message("The offsets for this connector have been altered successfully"));
    }
  }

  private void requireStopped(String name) {
    Optional<String> state = connectorStates.apply(name);
    if (state.isEmpty() || !state.get().equals("STOPPED")) {
      throw new RefusedRequest(
          400,
          "Connectors must be in the STOPPED state before their offsets can be modified. This can"
              + " be done for the specified connector by issuing a 'PUT' request to the"
              + " '/connectors/"
              + name
              + "/stop' endpoint"
              + state.map(s -> " (it is " + s + ")").orElse(""));
    }
  }

  private static byte[] readBody(ContainerRequestContext request) throws IOException {
    try {
      return BoundedBody.read(request);
    } catch (BoundedBody.TooLarge e) {
      throw new RefusedRequest(413, e.getMessage());
    }
  }

  /**
   * Connect's sink offsets form: {@code {"offsets": [{"partition": {"kafka_topic": t,
   * "kafka_partition": p}, "offset": {"kafka_offset": o} or null}]}}.
   */
  static Map<TopicPartition, Long> parseOffsets(byte[] body) {
    JsonNode tree;
    try {
      tree = RestJson.MAPPER.readTree(body);
    } catch (IOException e) {
      throw new RefusedRequest(400, "the request body is not JSON: " + e.getMessage());
    }
    JsonNode list = tree == null ? null : tree.get("offsets");
    if (!(list instanceof ArrayNode entries) || entries.isEmpty()) {
      throw new RefusedRequest(
          400, "Partitions / offsets need to be provided for an alter offsets request");
    }
    Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
    for (JsonNode entry : entries) {
      JsonNode partition = entry.get("partition");
      if (partition == null
          || !partition.path(KAFKA_TOPIC).isTextual()
          || partition.path(KAFKA_TOPIC).asText().isBlank()
          || !partition.path(KAFKA_PARTITION).canConvertToInt()
          || partition.path(KAFKA_PARTITION).asInt() < 0) {
        throw new RefusedRequest(
            400,
            "each partition needs a '"
                + KAFKA_TOPIC
                + "' (a topic name) and a '"
                + KAFKA_PARTITION
                + "' (a partition number): "
                + entry);
      }
      TopicPartition tp =
          new TopicPartition(
              partition.get(KAFKA_TOPIC).asText(), partition.get(KAFKA_PARTITION).asInt());
      JsonNode offset = entry.get("offset");
      if (offset == null || offset.isNull()) {
        offsets.put(tp, null);
        continue;
      }
      JsonNode value = offset.get(KAFKA_OFFSET);
      if (value == null || !value.canConvertToLong() || value.asLong() < 0) {
        throw new RefusedRequest(
            400,
            "the offset of "
                + tp
                + " needs a non-negative '"
                + KAFKA_OFFSET
                + "' (or null to reset it): "
                + entry);
      }
      offsets.put(tp, value.asLong());
    }
    return offsets;
  }

  /**
   * Connect's sink offsets form, each offset with the share-partition's lag beside it ({@value
   * #SHARE_LAG}): on a share group, records at or above the offset may already be done.
   */
  static ObjectNode offsetsJson(Map<TopicPartition, ConnectorShareGroup.Position> positions) {
    ObjectNode root = RestJson.MAPPER.createObjectNode();
    ArrayNode list = root.putArray("offsets");
    positions.forEach(
        (tp, position) -> {
          ObjectNode entry = list.addObject();
          entry
              .putObject("partition")
              .put(KAFKA_TOPIC, tp.topic())
              .put(KAFKA_PARTITION, tp.partition());
          ObjectNode offset = entry.putObject("offset").put(KAFKA_OFFSET, position.offset());
          if (position.lag() != null) {
            offset.put(SHARE_LAG, position.lag());
          }
        });
    return root;
  }

  private static ObjectNode message(String text) {
    return RestJson.MAPPER.createObjectNode().put("message", text);
  }

  private static Response ok(JsonNode body) {
    return Response.ok(body.toString(), MediaType.APPLICATION_JSON_TYPE).build();
  }

  private static Response error(int status, String message) {
    ObjectNode body =
        RestJson.MAPPER.createObjectNode().put("error_code", status).put("message", message);
    return Response.status(status)
        .type(MediaType.APPLICATION_JSON_TYPE)
        .entity(body.toString())
        .build();
  }

  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /** A request answered with a 4xx of ours. */
  static final class RefusedRequest extends RuntimeException {
    final int status;

    RefusedRequest(int status, String message) {
      super(message);
      this.status = status;
    }
  }
}
