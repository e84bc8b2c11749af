package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import java.io.IOException;
import java.net.ServerSocket;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class NativeEngineTest {

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  @Test
  void reportsTheBuildVersion() {
    assertEquals(System.getProperty("sharesink.test.version"), NativeEngine.nativeVersion());
  }

  @Test
  void aRustPanicBecomesAnExceptionAndTheJvmLivesOn() {
    NativeException e =
        assertThrows(NativeException.class, () -> NativeEngine.panicForTest("deliberate"));
    assertEquals(EngineException.Kind.PANIC, e.kind());
    assertFalse(e.retriable());
    assertTrue(e.getMessage().contains("deliberate"), e.getMessage());
    assertTrue(e.getMessage().contains("Rust panic at "), e.getMessage());
    // Still usable after the panic.
    assertEquals(System.getProperty("sharesink.test.version"), NativeEngine.nativeVersion());
  }

  @Test
  void refusedConnectionIsARetriableConnectionError() throws IOException {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    NativeException e =
        assertThrows(
            NativeException.class, () -> NativeEngine.probe("127.0.0.1:" + closedPort, 2_000));
    assertEquals(EngineException.Kind.CONNECTION, e.kind());
    assertTrue(e.retriable());
  }

  @Test
  void badArgumentsAreConfigErrors() {
    NativeException badAddress =
        assertThrows(NativeException.class, () -> NativeEngine.probe("no-port-here", 1_000));
    assertEquals(EngineException.Kind.CONFIG, badAddress.kind());
    NativeException nullAddress =
        assertThrows(NativeException.class, () -> NativeEngine.probe(null, 1_000));
    assertEquals(EngineException.Kind.CONFIG, nullAddress.kind());
    NativeException negativeTimeout =
        assertThrows(NativeException.class, () -> NativeEngine.probe("localhost:9092", -5));
    assertEquals(EngineException.Kind.CONFIG, negativeTimeout.kind());
  }
}
