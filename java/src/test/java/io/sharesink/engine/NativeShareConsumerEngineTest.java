package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Error kinds of {@link NativeShareConsumerEngine} that need no broker. */
class NativeShareConsumerEngineTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  @Test
  void badConfigurationIsAConfigError() {
    NativeException noGroup =
        assertThrows(
            NativeException.class,
            () ->
                new NativeShareConsumerEngine(
                    Map.of("bootstrap.servers", "127.0.0.1:9"), List.of("t")));
    assertEquals(EngineException.Kind.CONFIG, noGroup.kind());
    assertTrue(noGroup.getMessage().contains("group.id"), noGroup.getMessage());
    assertFalse(noGroup.retriable());

    NativeException badNumber =
        assertThrows(
            NativeException.class,
            () ->
                new NativeShareConsumerEngine(
                    Map.of(
                        "bootstrap.servers", "127.0.0.1:9",
                        "group.id", "g",
                        "max.poll.records", "many"),
                    List.of("t")));
    assertEquals(EngineException.Kind.CONFIG, badNumber.kind());
    assertTrue(badNumber.getMessage().contains("max.poll.records"), badNumber.getMessage());
  }

  @Test
  void anUnreachableBootstrapIsARetriableConnectionError() throws IOException {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    NativeException e =
        assertThrows(
            NativeException.class,
            () ->
                new NativeShareConsumerEngine(
                    Map.of("bootstrap.servers", "127.0.0.1:" + closedPort, "group.id", "g"),
                    List.of("t")));
    assertTrue(
        e.kind() == EngineException.Kind.CONNECTION || e.kind() == EngineException.Kind.TIMEOUT,
        e.toString());
    assertTrue(e.retriable());
  }

  @Test
  void aSilentBrokerIsATimeout() throws IOException {
    // Accepts connections (the backlog does) but never answers.
    try (ServerSocket silent = new ServerSocket(0)) {
      long start = System.nanoTime();
      NativeException e =
          assertThrows(
              NativeException.class,
              () ->
                  new NativeShareConsumerEngine(
                      Map.of(
                          "bootstrap.servers", "127.0.0.1:" + silent.getLocalPort(),
                          "group.id", "g",
                          "request.timeout.ms", "1000"),
                      List.of("t")));
      long ms = (System.nanoTime() - start) / 1_000_000;
      assertEquals(EngineException.Kind.TIMEOUT, e.kind(), e.toString());
      assertTrue(e.retriable());
      assertTrue(ms < 10_000, "bounded by request.timeout.ms, took " + ms + " ms");
    }
  }

  @Test
  void theRuntimeStopsWhenNoConsumerIsLeft() {
    assertThrows(
        NativeException.class,
        () -> new NativeShareConsumerEngine(Map.of("bootstrap.servers", "x:1"), List.of("t")));
    assertFalse(NativeShareConsumerEngine.runtimeRunning());
  }
}
