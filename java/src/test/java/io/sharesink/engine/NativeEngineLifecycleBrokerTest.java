package io.sharesink.engine;

import static io.sharesink.engine.kafka.BrokerTestSupport.bootstrap;
import static io.sharesink.engine.kafka.BrokerTestSupport.configureGroup;
import static io.sharesink.engine.kafka.BrokerTestSupport.consumerConfig;
import static io.sharesink.engine.kafka.BrokerTestSupport.createTopic;
import static io.sharesink.engine.kafka.BrokerTestSupport.unique;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * 1,000 create-poll-close cycles in one JVM: resident memory and thread count must stay flat (the
 * runtime starts and stops with its consumer each time, the handle and its buffers are freed).
 */
@Tag("broker")
class NativeEngineLifecycleBrokerTest {

  static final int CYCLES = Integer.getInteger("sharesink.test.cycles", 1000);

  /** Cycles before the baseline: JIT, class loading and heap sizing settle first. */
  static final int WARMUP = 200;

  @BeforeAll
  static void load() {
    NativeLoader.ensureLoaded();
  }

  /** A field of /proc/self/status, e.g. VmRSS (kB) or Threads. */
  static long status(String field) throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith(field + ":")) {
        return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
      }
    }
    throw new IllegalStateException(field + " not in /proc/self/status");
  }

  @Test
  void createPollCloseCyclesKeepMemoryAndThreadsFlat() throws Exception {
    String group = unique("native-cycles-group");
    String topic = unique("native-cycles");
    createTopic(bootstrap(), topic, 1);
    configureGroup(bootstrap(), group, Map.of("share.auto.offset.reset", "earliest"));
    Map<String, Object> config = consumerConfig(bootstrap(), group);

    long rssAfterWarmup = 0;
    long threadsAfterWarmup = 0;
    long createNanos = 0;
    long closeNanos = 0;
    for (int i = 1; i <= CYCLES; i++) {
      long t0 = System.nanoTime();
      NativeShareConsumerEngine engine = new NativeShareConsumerEngine(config, List.of(topic));
      long t1 = System.nanoTime();
      try {
        engine.poll(Duration.ofMillis(1));
      } finally {
        engine.close();
      }
      createNanos += t1 - t0;
      closeNanos += System.nanoTime() - t1;
      assertFalse(NativeShareConsumerEngine.runtimeRunning(), "runtime stops with the last close");
      if (i == WARMUP) {
        rssAfterWarmup = status("VmRSS");
        threadsAfterWarmup = status("Threads");
      }
      if (i % 100 == 0) {
        System.out.printf(
            "cycle %d: VmRSS %d kB, threads %d; last 100 cycles: create %.1f ms, poll+close %.1f"
                + " ms per cycle%n",
            i, status("VmRSS"), status("Threads"), createNanos / 1e8, closeNanos / 1e8);
        createNanos = 0;
        closeNanos = 0;
      }
    }
    long rss = status("VmRSS");
    long threads = status("Threads");
    System.out.printf(
        "%d cycles: VmRSS %d kB after %d cycles -> %d kB at the end (%+d kB, %.2f kB/cycle);"
            + " threads %d -> %d; pooled direct buffers %d kB%n",
        CYCLES,
        rssAfterWarmup,
        WARMUP,
        rss,
        rss - rssAfterWarmup,
        (rss - rssAfterWarmup) / (double) (CYCLES - WARMUP),
        threadsAfterWarmup,
        threads,
        DirectBuffers.pooledBytes() / 1024);
    assertTrue(
        rss - rssAfterWarmup < 32 * 1024,
        "resident memory grew by " + (rss - rssAfterWarmup) + " kB over the cycles");
    assertTrue(
        threads - threadsAfterWarmup <= 4,
        "threads went from " + threadsAfterWarmup + " to " + threads);
  }
}
