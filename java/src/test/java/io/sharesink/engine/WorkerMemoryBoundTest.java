package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class WorkerMemoryBoundTest {

  private static final long MIB = 1L << 20;

  @Test
  void defaultsToHalfTheHeapAndAtLeast256MiB() {
    assertEquals(1024 * MIB, NativeShareConsumerEngine.workerMemoryBound(null, 2048 * MIB));
    assertEquals(1024 * MIB, NativeShareConsumerEngine.workerMemoryBound(" ", 2048 * MIB));
    assertEquals(256 * MIB, NativeShareConsumerEngine.workerMemoryBound(null, 256 * MIB));
  }

  @Test
  void takesTheOperatorsValue() {
    assertEquals(64 * MIB, NativeShareConsumerEngine.workerMemoryBound(" 67108864 ", 2048 * MIB));
  }

  @Test
  void refusesWhatIsNoBoundNamingTheProperty() {
    for (String bad : new String[] {"1g", "-1", "1048576"}) {
      EngineException e =
          assertThrows(
              EngineException.class,
              () -> NativeShareConsumerEngine.workerMemoryBound(bad, 2048 * MIB),
              bad);
      assertEquals(EngineException.Kind.CONFIG, e.kind());
      assertTrue(
          e.getMessage().contains(NativeShareConsumerEngine.MEMORY_PROPERTY), e.getMessage());
    }
  }
}
