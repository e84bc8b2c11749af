package io.sharesink.engine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ShareConsumerEngine} over the native (Rust) engine: one share-group member behind a
 * {@code long} handle, one JNI crossing per poll and per batch of acknowledgements.
 *
 * <p>The native library must be loaded first ({@code
 * io.sharesink.connect.nativelib.NativeLoader#ensureLoaded()}); this package knows nothing of
 * Connect, so it does not load it itself.
 *
 * <p>Lifecycle: every call holds the handle while it runs (an in-flight count under a lock). {@link
 * #close} marks the engine closed, closes the native member (which wakes a blocked poll on another
 * thread), and frees the handle once the last in-flight call has returned; calls after close throw
 * {@link IllegalStateException}, a {@link #wakeup} after close does nothing. The first consumer in
 * the JVM starts the native runtime, the last one to close stops it.
 *
 * <p>Time: the only wait on the Java side is close's wait for calls still running on other threads,
 * a {@link Time#waitObject} on the engine's lock, on the clock the engine is given.
 *
 * <p>Logs: native log lines of this member are re-logged through SLF4J by the thread that polls (or
 * closes), so they carry its MDC; see {@link NativeLogBridge}.
 */
public final class NativeShareConsumerEngine implements ShareConsumerEngine {

  private static final Logger log = LoggerFactory.getLogger(NativeShareConsumerEngine.class);

  /** JVM property: the native runtime's worker thread count (default 2). */
  public static final String THREADS_PROPERTY = "sharesink.engine.threads";

  /**
   * JVM property: the bound on the memory the records of all native members of this worker hold
   * together, in bytes (default {@link #defaultWorkerMemoryBound}); each member holds at most a
   * quarter of it. A JVM property, not a connector setting: no tenant's connector can raise it.
   */
  public static final String MEMORY_PROPERTY = "sharesink.engine.memory.max.bytes";

  /** The smallest worker bound accepted: 16 MiB. */
  static final long MIN_WORKER_MEMORY = 16L << 20;

  /** Base poll buffer; batches that do not fit are split, so it grows only for huge records. */
  static final int DEFAULT_BUFFER_BYTES = 1 << 20;

  /** How long close waits for calls still running on other threads before leaving the free. */
  private static final long CLOSE_WAIT_MS = 30_000;

  private final Object lock = new Object();
  private long handle;
  private int inFlight;
  private boolean closed;

  private final String description;
  private final Time time;
  private PollBuffer pollBuffer;

  /** The thread of the latest poll (read under {@link #lock}, written before its exit). */
  private Thread pollThread;

  private final AckLayout ackLayout = new AckLayout();
  private final NativeLogBridge logs;
  private final long[] metricsValues = new long[MetricsLayout.FIELDS];

  /**
   * Joins the share group {@code group.id} as a new member subscribed to {@code topics}.
   *
   * @param kafkaSettings Kafka client settings (see {@link KafkaClientConfigTranslator})
   * @throws EngineException with kind CONFIG for bad settings, CONNECTION or TIMEOUT when the
   *     cluster cannot be reached, and so on
   */
  public NativeShareConsumerEngine(Map<String, ?> kafkaSettings, List<String> topics) {
    this(kafkaSettings, topics, Time.SYSTEM);
  }

  /** As {@link #NativeShareConsumerEngine(Map, List)}, on the clock {@code time}. */
  public NativeShareConsumerEngine(Map<String, ?> kafkaSettings, List<String> topics, Time time) {
    this(kafkaSettings, topics, DEFAULT_BUFFER_BYTES, new NativeLogBridge(), time);
  }

  NativeShareConsumerEngine(
      Map<String, ?> kafkaSettings, List<String> topics, int bufferBytes, NativeLogBridge logs) {
    this(kafkaSettings, topics, bufferBytes, logs, Time.SYSTEM);
  }

  NativeShareConsumerEngine(
      Map<String, ?> kafkaSettings,
      List<String> topics,
      int bufferBytes,
      NativeLogBridge logs,
      Time time) {
    this.logs = logs;
    this.time = time;
    Map<String, String> props = KafkaClientConfigTranslator.translate(kafkaSettings);
    this.description = "share member of " + props.get("group.id") + " on " + topics;
    byte[] blob = configBlob(props, topics);
    try {
      NativeEngine.init(
          Integer.getInteger(THREADS_PROPERTY, 0),
          logs.maxLevel(),
          workerMemoryBound(System.getProperty(MEMORY_PROPERTY), Runtime.getRuntime().maxMemory()));
    } catch (UnsatisfiedLinkError e) {
      throw new EngineException(
          EngineException.Kind.INTERNAL,
          "the sharesink native library is not loaded (NativeLoader.ensureLoaded() first): " + e,
          e);
    }
    try {
      this.handle = NativeEngine.create(blob);
    } catch (RuntimeException | Error e) {
      // Lines about a failed start are in the global queue.
      logs.drain(0);
      logs.release();
      throw e;
    }
    logs.drain(0);
    this.pollBuffer = new PollBuffer(bufferBytes);
    logs.drain(handle);
  }

  /**
   * Half the JVM's maximum heap, at least 256 MiB (Connect's start script gives a worker 2 GiB of
   * heap, hence 1 GiB): the engine's records are converted onto the heap, and the JVM's own default
   * for direct memory is the heap's size.
   */
  static long defaultWorkerMemoryBound(long maxHeap) {
    return Math.max(256L << 20, maxHeap / 2);
  }

  /**
   * The worker's memory bound from the value of {@value #MEMORY_PROPERTY} (null: the default for
   * {@code maxHeap}).
   *
   * @throws EngineException of kind CONFIG naming the property when the value is not a number of
   *     bytes of at least 16 MiB
   */
  static long workerMemoryBound(String value, long maxHeap) {
    if (value == null || value.isBlank()) {
      return defaultWorkerMemoryBound(maxHeap);
    }
    long bytes;
    try {
      bytes = Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      bytes = -1;
    }
    if (bytes < MIN_WORKER_MEMORY) {
      throw new EngineException(
          EngineException.Kind.CONFIG,
          "JVM property "
              + MEMORY_PROPERTY
              + "="
              + value
              + " is not a number of bytes of at least "
              + MIN_WORKER_MEMORY);
    }
    return bytes;
  }

  /** The create blob: little-endian {@code i32 n, n × (key, value), i32 t, t × topic}. */
  static byte[] configBlob(Map<String, String> props, List<String> topics) {
    int size = 8;
    byte[][] strings = new byte[props.size() * 2 + topics.size()][];
    int s = 0;
    for (Map.Entry<String, String> e : props.entrySet()) {
      strings[s++] = e.getKey().getBytes(StandardCharsets.UTF_8);
      strings[s++] = e.getValue().getBytes(StandardCharsets.UTF_8);
    }
    for (String topic : topics) {
      strings[s++] = topic.getBytes(StandardCharsets.UTF_8);
    }
    for (byte[] b : strings) {
      size += 4 + b.length;
    }
    ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    out.putInt(props.size());
    for (int i = 0; i < props.size() * 2; i++) {
      out.putInt(strings[i].length).put(strings[i]);
    }
    out.putInt(topics.size());
    for (int i = props.size() * 2; i < strings.length; i++) {
      out.putInt(strings[i].length).put(strings[i]);
    }
    return out.array();
  }

  /** The subscribe blob: little-endian {@code i32 t, t × topic}. */
  static byte[] topicsBlob(Collection<String> topics) {
    byte[][] names = new byte[topics.size()][];
    int size = 4;
    int i = 0;
    for (String topic : topics) {
      names[i] = topic.getBytes(StandardCharsets.UTF_8);
      size += 4 + names[i].length;
      i++;
    }
    ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    out.putInt(names.length);
    for (byte[] name : names) {
      out.putInt(name.length).put(name);
    }
    return out.array();
  }

  private long enter() {
    synchronized (lock) {
      if (closed) {
        throw new IllegalStateException("the native share consumer engine is closed");
      }
      inFlight++;
      return handle;
    }
  }

  private void exit() {
    synchronized (lock) {
      inFlight--;
      freeIfIdle();
    }
  }

  /** Frees the handle once closed and no call holds it. Called with the lock held. */
  private void freeIfIdle() {
    if (closed && inFlight == 0 && handle != 0) {
      long h = handle;
      handle = 0;
      try {
        logs.drain(h);
      } finally {
        NativeEngine.destroy(h);
        lock.notifyAll();
        // No call holds the engine now and none can start: its buffers can serve the next one.
        logs.release();
        synchronized (ackLayout) {
          ackLayout.release();
        }
        // The poll buffer only when its batch views are surely dead: freed on the polling
        // thread (which is past its last view), or never polled. A close from another thread
        // may race the task thread still reading its last batch; then the GC reclaims it.
        if (pollThread == null || pollThread == Thread.currentThread()) {
          pollBuffer.release();
        }
        pollBuffer = null;
      }
    }
  }

  @Override
  public ShareBatch poll(Duration timeout) {
    long h = enter();
    pollThread = Thread.currentThread();
    try {
      long timeoutMs = Math.max(0, timeout.toMillis());
      ByteBuffer buffer = pollBuffer.forPoll();
      int count = NativeEngine.poll(h, buffer, timeoutMs);
      while (count < -1) {
        log.debug(
            "{}: poll buffer grows from {} bytes for a record of {}",
            description,
            buffer.capacity(),
            -count);
        buffer = pollBuffer.grow(-count);
        count = NativeEngine.poll(h, buffer, 0);
      }
      if (count > 0) {
        pollBuffer.written(buffer.getInt(BatchLayout.H_BYTES_USED));
      }
      if (count < 0 || NativeShareBatch.pendingLogs(buffer) > 0) {
        logs.drain(h);
        logs.drain(0);
      }
      return count <= 0 ? NativeShareBatch.EMPTY : new NativeShareBatch(buffer);
    } finally {
      exit();
    }
  }

  @Override
  public void acknowledge(Acknowledgements acks) {
    if (acks.isEmpty()) {
      return;
    }
    long h = enter();
    try {
      synchronized (ackLayout) {
        int length = ackLayout.pack(acks);
        NativeEngine.acknowledge(h, ackLayout.buffer(), length);
      }
    } finally {
      exit();
    }
  }

  @Override
  public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
    if (acks.isEmpty()) {
      return List.of();
    }
    long h = enter();
    try {
      synchronized (ackLayout) {
        int length = ackLayout.pack(acks);
        int count =
            NativeEngine.acknowledgeSync(
                h, ackLayout.buffer(), length, Math.max(0, timeout.toMillis()));
        return ackLayout.results(acks, count);
      }
    } finally {
      exit();
    }
  }

  /**
   * Hands the new subscription to the native member, which sends it with an immediate heartbeat.
   * Its log line about the change is re-logged by the next poll.
   */
  @Override
  public void subscribe(Collection<String> topics) {
    byte[] blob = topicsBlob(topics);
    long h = enter();
    try {
      NativeEngine.subscribe(h, blob);
    } finally {
      exit();
    }
  }

  @Override
  public void wakeup() {
    long h;
    synchronized (lock) {
      if (closed) {
        return;
      }
      inFlight++;
      h = handle;
    }
    try {
      NativeEngine.wakeup(h);
    } finally {
      exit();
    }
  }

  @Override
  public EngineMetrics metrics() {
    long h = enter();
    try {
      long[] m = metricsValues;
      synchronized (m) {
        NativeEngine.metrics(h, m);
        return MetricsLayout.read(m);
      }
    } finally {
      exit();
    }
  }

  @Override
  public void close() {
    long h;
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      inFlight++; // the close itself holds the handle until the native close returns
      h = handle;
    }
    try {
      NativeEngine.close(h);
    } catch (EngineException e) {
      log.warn("{}: closing the native share consumer failed: {}", description, e.getMessage());
    } finally {
      synchronized (lock) {
        inFlight--;
        freeIfIdle();
        try {
          // The last call to exit frees the handle and notifies the lock.
          time.waitObject(lock, () -> handle == 0, time.milliseconds() + CLOSE_WAIT_MS);
        } catch (TimeoutException e) {
          log.warn(
              "{}: {} call(s) still running {} ms after close; the last one frees the handle",
              description,
              inFlight,
              CLOSE_WAIT_MS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  /** What the native library has allocated and not freed, all engines of this JVM. */
  @Override
  public OptionalLong offHeapBytes() {
    return OptionalLong.of(NativeEngine.allocatedBytes());
  }

  /** Whether the native engine runtime (its threads) exists now; for tests and diagnostics. */
  public static boolean runtimeRunning() {
    return NativeEngine.runtimeRunning();
  }

  @Override
  public String toString() {
    return description;
  }
}
