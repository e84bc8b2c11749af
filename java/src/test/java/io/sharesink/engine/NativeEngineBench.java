package io.sharesink.engine;

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.engine.kafka.BrokerTestSupport;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Benchmark (not a test): consumes N records through JNI the way the Connect adapter does, copying
 * each key and value into a {@code byte[]} (what converters need) and ACCEPTing every batch, then
 * prints records/s and CPU seconds per million records. Compare with the engine's own {@code
 * sharesink-bench} on the same topic: the clock starts at the first record in both.
 *
 * <pre>
 * java -cp ... io.sharesink.engine.NativeEngineBench --bootstrap HOST:PORT --topic T --records N
 *     [--group G] [--set KEY=VALUE]...
 * </pre>
 */
public final class NativeEngineBench {

  private NativeEngineBench() {}

  private static double cpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime()
        / 1e9;
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String group = "sharesink-jni-bench-" + ProcessHandle.current().pid();
    long records = 0;
    Map<String, Object> config = new HashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      String value = args[i + 1];
      switch (args[i]) {
        case "--bootstrap" -> bootstrap = value;
        case "--topic" -> topic = value;
        case "--group" -> group = value;
        case "--records" -> records = Long.parseLong(value);
        case "--set" ->
            config.put(
                value.substring(0, value.indexOf('=')), value.substring(value.indexOf('=') + 1));
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    if (bootstrap == null || topic == null || records <= 0) {
      throw new IllegalArgumentException("--bootstrap, --topic and --records are required");
    }
    NativeLoader.ensureLoaded();
    BrokerTestSupport.configureGroup(
        bootstrap, group, Map.of("share.auto.offset.reset", "earliest"));
    config.put("bootstrap.servers", bootstrap);
    config.put("group.id", group);

    long consumed = 0;
    long bytes = 0;
    long checksum = 0;
    long started = System.nanoTime();
    long firstRecord = 0;
    double cpuAtFirst = 0;
    long polls = 0;
    try (NativeShareConsumerEngine engine = new NativeShareConsumerEngine(config, List.of(topic))) {
      Acknowledgements acks = new Acknowledgements();
      long idleSince = System.nanoTime();
      while (consumed < records) {
        ShareBatch batch = engine.poll(Duration.ofMillis(200));
        polls++;
        if (batch.isEmpty()) {
          if (firstRecord != 0 && System.nanoTime() - idleSince > 30_000_000_000L) {
            System.err.println("no progress for 30 s at " + consumed + " records; stopping");
            break;
          }
          continue;
        }
        idleSince = System.nanoTime();
        if (firstRecord == 0) {
          firstRecord = System.nanoTime();
          cpuAtFirst = cpuSeconds();
        }
        acks.clear();
        String runTopic = null;
        int runPartition = -1;
        long runFirst = -1;
        long runLast = -2;
        for (int i = 0; i < batch.size(); i++) {
          byte[] key = batch.key(i);
          byte[] value = batch.value(i);
          if (key != null) {
            bytes += key.length;
            checksum += key.length > 0 ? key[0] : 0;
          }
          if (value != null) {
            bytes += value.length;
            checksum += value.length > 0 ? value[0] : 0;
          }
          // Contiguous offsets of one partition become one ACCEPT range.
          String t = batch.topic(i);
          int p = batch.partition(i);
          long o = batch.offset(i);
          if (p == runPartition && o == runLast + 1 && t.equals(runTopic)) {
            runLast = o;
          } else {
            if (runTopic != null) {
              acks.add(runTopic, runPartition, runFirst, runLast, AckType.ACCEPT);
            }
            runTopic = t;
            runPartition = p;
            runFirst = o;
            runLast = o;
          }
        }
        acks.add(runTopic, runPartition, runFirst, runLast, AckType.ACCEPT);
        engine.acknowledge(acks);
        consumed += batch.size();
      }
      long end = System.nanoTime();
      double cpu = cpuSeconds() - cpuAtFirst;
      double secs = Math.max(1e-9, (end - firstRecord) / 1e9);
      EngineMetrics m = engine.metrics();
      System.out.printf(
          "JNI: consumed %d records (%.1f MB) in %.2f s (+%.2f s join): %.0f records/s, %.2f MB/s,"
              + " CPU %.2f s (%.2f CPU s per million records), %d polls, checksum %d%n",
          consumed,
          bytes / 1e6,
          secs,
          (firstRecord - started) / 1e9,
          consumed / secs,
          bytes / 1e6 / secs,
          cpu,
          cpu / (consumed / 1e6),
          polls,
          checksum);
      System.out.printf(
          "JNI member: fetches %d (avg %.1f ms), accepted %d, ack errors %d%n",
          m.fetchRequests(), m.fetchLatencyAvgMs(), m.acceptedRecords(), m.ackErrors());
    }
  }
}
