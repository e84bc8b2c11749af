package io.sharesink.engine;

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.engine.kafka.BrokerTestSupport;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Benchmark (not a test): consumes N records through JNI the way the Connect adapter does, copying
 * each key and value into a {@code byte[]} (what converters need) and ACCEPTing every batch, then
 * prints records/s and CPU seconds per million records. Compare with the engine's own {@code
 * sharesink-bench} on the same topic: the clock starts at the first record in both.
 *
 * <p>Before joining, the per-batch work runs over a synthetic batch until the JIT has compiled it
 * ({@link #warmUp}; {@code --no-warm-up} skips it). After the figures, a line splits the measured
 * CPU by thread (the polling thread is {@code java}, the native runtime's workers {@code
 * sharesink-engine}, the JIT's {@code C1/C2 CompilerThread}, the collector's {@code GC Thread} and
 * {@code G1 ...}).
 *
 * <pre>
 * java -cp ... io.sharesink.engine.NativeEngineBench --bootstrap HOST:PORT --topic T --records N
 *     [--group G] [--set KEY=VALUE]... [--no-warm-up]
 * </pre>
 */
public final class NativeEngineBench {

  private NativeEngineBench() {}

  private static double cpuSeconds() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime()
        / 1e9;
  }

  /**
   * CPU nanoseconds of each live thread of this process, by thread name with its number dropped
   * ("GC Thread#1" and "GC Thread#0" count as one), from /proc/self/task/N/schedstat; empty where
   * /proc has no such files.
   */
  static Map<String, Long> threadCpuNanos() {
    Map<String, Long> byName = new TreeMap<>();
    try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
      tasks.forEach(
          task -> {
            try {
              String name = Files.readString(task.resolve("comm")).trim();
              String stat = Files.readString(task.resolve("schedstat")).trim();
              long nanos = Long.parseLong(stat.substring(0, stat.indexOf(' ')));
              byName.merge(name.replaceAll("[#-]?\\d+$", ""), nanos, Long::sum);
            } catch (IOException | RuntimeException e) {
              // the thread ended meanwhile
            }
          });
    } catch (IOException e) {
      return Map.of();
    }
    return byName;
  }

  /** "name s, ..." of the CPU each thread group used between two {@link #threadCpuNanos}. */
  static String threadCpuDelta(Map<String, Long> before, Map<String, Long> after, double total) {
    StringBuilder out = new StringBuilder();
    double attributed = 0;
    for (Map.Entry<String, Long> e : after.entrySet()) {
      double s = (e.getValue() - before.getOrDefault(e.getKey(), 0L)) / 1e9;
      attributed += s;
      if (s >= 0.005) {
        out.append(String.format("%s %.2f s, ", e.getKey(), s));
      }
    }
    return out.append(String.format("threads gone meanwhile %.2f s", total - attributed))
        .toString();
  }

  /**
   * What the bench does with each batch, as a Connect task would: copies every key and value into a
   * {@code byte[]} (adding their sizes to {@code totals[0]} and their first bytes to {@code
   * totals[1]}), reads topic, partition and offset, and collects one ACCEPT range per run of
   * contiguous offsets of one partition into {@code acks}.
   */
  static void process(ShareBatch batch, Acknowledgements acks, long[] totals) {
    acks.clear();
    long bytes = 0;
    long checksum = 0;
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
    if (runTopic != null) {
      acks.add(runTopic, runPartition, runFirst, runLast, AckType.ACCEPT);
    }
    totals[0] += bytes;
    totals[1] += checksum;
  }

  /** Records {@link #warmUp} processes: enough for the JIT to compile the per-record path. */
  static final int WARM_UP_RECORDS = 1_000_000;

  /**
   * Runs {@link #process} (and the packing of its acknowledgements) over a batch shaped like the
   * bench's (2,000 records of 100-byte values without keys over 6 partitions, in the native layout)
   * until {@link #WARM_UP_RECORDS} records went through, then waits until the JIT has finished
   * compiling, all before the engine joins. The JVM then measures with the per-record path
   * compiled, as in a Connect worker that has been running for a while, instead of interpreting it
   * and compiling it inside the measured window (about 0.1 CPU s per run, most of the gap to the
   * engine in a short run). The engine's bench is compiled ahead of time and has nothing to warm
   * up. Returns the records processed; {@code --no-warm-up} skips it.
   */
  static long warmUp() throws InterruptedException {
    NativeShareBatch batch = new NativeShareBatch(syntheticBatch("warm-up", 2000, 100, 6));
    Acknowledgements acks = new Acknowledgements();
    AckLayout packer = new AckLayout();
    long[] totals = new long[2];
    long done = 0;
    while (done < WARM_UP_RECORDS) {
      process(batch, acks, totals);
      packer.pack(acks);
      done += batch.size();
    }
    packer.release();
    // Compilation runs on its own threads: wait until it has been idle for 300 ms (at most 5 s).
    java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
      long deadline = System.nanoTime() + 5_000_000_000L;
      long last = -1;
      while (System.nanoTime() < deadline) {
        long now = jit.getTotalCompilationTime();
        if (now == last) {
          break;
        }
        last = now;
        Thread.sleep(300);
      }
    }
    return done;
  }

  /**
   * A batch in the native layout ({@link BatchLayout}) written on the Java side: {@code records}
   * records of one topic spread over {@code partitions} partitions in runs of contiguous offsets,
   * null keys, values of {@code valueBytes} bytes, no headers.
   */
  static ByteBuffer syntheticBatch(String topic, int records, int valueBytes, int partitions) {
    byte[] name = topic.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    int recordsPosition = (BatchLayout.HEADER_BYTES + 4 + name.length + 7) & ~7;
    int dataPosition = recordsPosition + records * BatchLayout.RECORD_BYTES;
    int used = dataPosition + records * valueBytes;
    ByteBuffer b = ByteBuffer.allocateDirect(used).order(ByteOrder.LITTLE_ENDIAN);
    b.putInt(BatchLayout.H_VERSION, BatchLayout.VERSION);
    b.putInt(BatchLayout.H_RECORD_COUNT, records);
    b.putInt(BatchLayout.H_TOPIC_COUNT, 1);
    b.putInt(BatchLayout.H_BYTES_USED, used);
    b.putInt(BatchLayout.H_RECORDS_POSITION, recordsPosition);
    b.putInt(BatchLayout.HEADER_BYTES, name.length);
    b.put(BatchLayout.HEADER_BYTES + 4, name);
    int perPartition = Math.max(1, records / partitions);
    for (int i = 0; i < records; i++) {
      int at = recordsPosition + i * BatchLayout.RECORD_BYTES;
      int valueAt = dataPosition + i * valueBytes;
      b.putLong(at + BatchLayout.R_OFFSET, 1000L + i % perPartition);
      b.putLong(at + BatchLayout.R_TIMESTAMP, 1_700_000_000_000L + i);
      b.putLong(at + BatchLayout.R_LOCK_DEADLINE, 2_000_000_000_000L);
      b.putInt(at + BatchLayout.R_TOPIC_INDEX, 0);
      b.putInt(at + BatchLayout.R_PARTITION, i / perPartition);
      b.putInt(at + BatchLayout.R_KEY_POSITION, valueAt);
      b.putInt(at + BatchLayout.R_KEY_LENGTH, -1);
      b.putInt(at + BatchLayout.R_VALUE_POSITION, valueAt);
      b.putInt(at + BatchLayout.R_VALUE_LENGTH, valueBytes);
      b.putInt(at + BatchLayout.R_HEADERS_POSITION, valueAt + valueBytes);
      b.putInt(at + BatchLayout.R_HEADER_COUNT, 0);
      b.putShort(at + BatchLayout.R_DELIVERY_COUNT, (short) 1);
      b.put(at + BatchLayout.R_TIMESTAMP_TYPE, (byte) 0);
      for (int v = 0; v < valueBytes; v++) {
        b.put(valueAt + v, (byte) 'x');
      }
    }
    return b;
  }

  public static void main(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String group = "sharesink-jni-bench-" + ProcessHandle.current().pid();
    long records = 0;
    Map<String, Object> config = new HashMap<>();
    boolean warmUp = true;
    for (int i = 0; i < args.length; i += 2) {
      if (args[i].equals("--no-warm-up")) {
        warmUp = false;
        i--;
        continue;
      }
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

    long warmedUp = warmUp ? warmUp() : 0;
    long consumed = 0;
    long[] totals = new long[2];
    long started = System.nanoTime();
    long firstRecord = 0;
    double cpuAtFirst = 0;
    Map<String, Long> threadsAtFirst = Map.of();
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
          threadsAtFirst = threadCpuNanos();
        }
        process(batch, acks, totals);
        engine.acknowledge(acks);
        consumed += batch.size();
      }
      long end = System.nanoTime();
      double cpu = cpuSeconds() - cpuAtFirst;
      Map<String, Long> threadsAtEnd = threadCpuNanos();
      double secs = Math.max(1e-9, (end - firstRecord) / 1e9);
      EngineMetrics m = engine.metrics();
      System.out.printf(
          "JNI: consumed %d records (%.1f MB) in %.2f s (+%.2f s join): %.0f records/s, %.2f MB/s,"
              + " CPU %.2f s (%.2f CPU s per million records), %d polls, checksum %d%n",
          consumed,
          totals[0] / 1e6,
          secs,
          (firstRecord - started) / 1e9,
          consumed / secs,
          totals[0] / 1e6 / secs,
          cpu,
          cpu / (consumed / 1e6),
          polls,
          totals[1]);
      System.out.printf(
          "JNI member: fetches %d (avg %.1f ms), accepted %d, ack errors %d%n",
          m.fetchRequests(), m.fetchLatencyAvgMs(), m.acceptedRecords(), m.ackErrors());
      if (warmedUp > 0) {
        System.out.printf(
            "JNI JIT warm-up before joining: %d records of a synthetic batch%n", warmedUp);
      }
      System.out.println(
          "JNI CPU by thread (from the first record): "
              + threadCpuDelta(threadsAtFirst, threadsAtEnd, cpu));
    }
  }
}
