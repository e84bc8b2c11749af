package io.sharesink.engine;

import java.nio.ByteBuffer;

/**
 * Every {@code native} method of sharesink, bound to {@code libsharesink_jni} (crate {@code
 * rust/jni}). The exported symbols are named after this class and package, so it must never be
 * renamed, shaded or relocated without changing the Rust side too.
 *
 * <p>The library must be loaded first, through {@code
 * io.sharesink.connect.nativelib.NativeLoader#ensureLoaded()}; calling a method before that throws
 * {@link UnsatisfiedLinkError}. Errors from native code arrive as {@link NativeException}.
 *
 * <p>Consumer methods take the {@code long} handle returned by {@link #create}. The caller ({@link
 * NativeShareConsumerEngine}) guarantees that {@link #destroy} is called once, after every other
 * call on that handle has returned; {@link #wakeup} and {@link #close} may run while {@link #poll}
 * blocks on another thread. Buffers are direct {@link ByteBuffer}s read and written in
 * little-endian order; their layouts are documented in {@link BatchLayout}, {@link AckLayout} and
 * {@link NativeLogBridge}, the metrics array's in {@link MetricsLayout}, each next to its Rust
 * counterpart.
 */
public final class NativeEngine {

  private NativeEngine() {}

  /** The native library's version ({@code CARGO_PKG_VERSION}); must equal the jar's version. */
  public static native String nativeVersion();

  /**
   * Connects to the cluster, asks for its API versions and metadata, and describes what it found
   * (one line, human readable). Blocks for at most about {@code timeoutMs}.
   *
   * @throws NativeException when the cluster cannot be reached or answers with an error
   */
  public static native String probe(String bootstrapServers, long timeoutMs);

  /**
   * Panics inside native code with {@code message}; used by tests to prove that a Rust panic
   * surfaces as a {@link NativeException} of kind {@link EngineException.Kind#PANIC} instead of
   * aborting the JVM.
   */
  static native void panicForTest(String message);

  /**
   * Sets the engine runtime's worker thread count (used when the runtime is next started: it starts
   * with the first consumer and stops with the last), the most verbose native log level to queue (0
   * off, 1 ERROR, 2 WARN, 3 INFO, 4 DEBUG, 5 TRACE) and the bound on the memory the records of all
   * members hold together (the worker's; each member holds at most a quarter of it). Installs the
   * native log layer on the first call. {@code workerThreads <= 0} and {@code memoryMaxBytes <= 0}
   * keep the current settings.
   */
  static native void init(int workerThreads, int maxLogLevel, long memoryMaxBytes);

  /**
   * Starts a share-group member: connects, checks the broker's API versions and joins the group.
   * {@code config} is the blob written by {@link NativeShareConsumerEngine}: little-endian {@code
   * i32 n, n × (key, value), i32 t, t × topic}, each string {@code i32 length, UTF-8 bytes}.
   *
   * @return the consumer handle
   */
  static native long create(byte[] config);

  /**
   * Waits up to {@code timeoutMs} for records and writes them into {@code buffer} ({@link
   * BatchLayout}).
   *
   * @return the record count ({@code 0} on timeout or wakeup, the header is written then too);
   *     {@code -1} when the consumer is closed; below {@code -1}: the next record needs a buffer of
   *     {@code -result} bytes (nothing is lost: the next call with a big enough buffer returns it)
   */
  static native int poll(long handle, ByteBuffer buffer, long timeoutMs);

  /**
   * Replaces the member's subscription with the topics in {@code topics} (little-endian {@code i32
   * t, t × topic}, the topic part of the {@link #create} blob); the next heartbeat carries it.
   * Returns at once. An empty list is a CONFIG error.
   */
  static native void subscribe(long handle, byte[] topics);

  /** Makes a blocked (or the next) {@link #poll} return 0 at once. */
  static native void wakeup(long handle);

  /** Queues the acknowledgements packed in the first {@code length} bytes of {@code acks}. */
  static native void acknowledge(long handle, ByteBuffer acks, int length);

  /**
   * Sends the packed acknowledgements now and waits up to {@code timeoutMs} for the broker's
   * answers, which are written over the request ({@link AckLayout}).
   *
   * @return the number of results written (one per range)
   */
  static native int acknowledgeSync(long handle, ByteBuffer acks, int length, long timeoutMs);

  /**
   * Fills {@code out} (at least {@link MetricsLayout#FIELDS} long) in the {@link MetricsLayout}.
   */
  static native void metrics(long handle, long[] out);

  /**
   * Moves queued native log lines of the consumer (or, for handle 0, of the global queue) into
   * {@code out} ({@link NativeLogBridge}); returns how many.
   */
  static native int drainLogs(long handle, ByteBuffer out);

  /**
   * Closes the share sessions (releasing every record not acknowledged) and leaves the group; a
   * blocked {@link #poll} returns {@code -1}. The handle stays valid until {@link #destroy}.
   */
  static native void close(long handle);

  /** Frees the handle; no other call on it may be running or follow. */
  static native void destroy(long handle);

  /**
   * Bytes the native library has allocated and not freed: every engine of this JVM together (the
   * JVM's own memory is not in it).
   */
  static native long allocatedBytes();

  /** Whether the native engine runtime (its threads) exists now. */
  static native boolean runtimeRunning();

  /**
   * Writes a fixed batch as {@link #poll} would (see {@code self_test_records} in {@code
   * rust/jni/src/batch_layout.rs}), so tests can check the Java reader against the Rust writer.
   *
   * @return the record count, or minus the bytes needed
   */
  static native int layoutSelfTest(ByteBuffer out);

  /**
   * Writes a fixed snapshot as {@link #metrics} would (see {@code self_test_snapshot} in {@code
   * rust/jni/src/metrics_layout.rs}), so tests can check {@link MetricsLayout} against the Rust
   * writer.
   *
   * @return the number of values written
   */
  static native int metricsLayoutSelfTest(long[] out);
}
