package io.sharesink.engine;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Re-logs native {@code tracing} lines through SLF4J on the calling thread, so they carry its MDC
 * (the worker's {@code connector.context}) and obey the worker's log configuration. One logger per
 * native target: {@code sharesink_engine::fetcher} logs as {@code
 * io.sharesink.native.sharesink_engine.fetcher}, at the line's own level.
 *
 * <p>Drain layout ({@code rust/jni/src/logs.rs} writes it), little-endian:
 *
 * <pre>
 *    0  i32  lines written e        4  i32  lines still queued
 *    8  i64  lines dropped since the last drain (queue full)
 *   16  e × (i32 level 1 ERROR .. 5 TRACE, i32 target length, target UTF-8,
 *            i32 text length, text UTF-8)
 * </pre>
 */
final class NativeLogBridge {

  /** Parent of every native logger; its level decides which native lines are queued at all. */
  static final String LOGGER_PREFIX = "io.sharesink.native";

  private static final int BUFFER_BYTES = 64 * 1024;

  /** Drains per call at most this many buffers, so a flood cannot stall a poll for long. */
  private static final int MAX_ROUNDS = 4;

  private static final Logger root = LoggerFactory.getLogger(LOGGER_PREFIX);
  private static final ConcurrentHashMap<String, Logger> loggers = new ConcurrentHashMap<>();

  /** Where drained lines go; SLF4J outside tests. */
  interface Sink {
    /** The native level code (0 off .. 5 TRACE) of the most verbose line wanted. */
    int maxLevel();

    void log(int level, String target, String text);
  }

  /** Each native target to its own SLF4J logger, at the line's level. */
  static final Sink SLF4J =
      new Sink() {
        @Override
        public int maxLevel() {
          if (root.isTraceEnabled()) {
            return 5;
          }
          if (root.isDebugEnabled()) {
            return 4;
          }
          if (root.isInfoEnabled()) {
            return 3;
          }
          if (root.isWarnEnabled()) {
            return 2;
          }
          return root.isErrorEnabled() ? 1 : 0;
        }

        @Override
        public void log(int level, String target, String text) {
          Logger logger = loggerFor(target);
          switch (level) {
            case 1 -> logger.error(text);
            case 2 -> logger.warn(text);
            case 3 -> logger.info(text);
            case 4 -> logger.debug(text);
            default -> logger.trace(text);
          }
        }
      };

  /** Taken on first drain, given back by {@link #release}. */
  private ByteBuffer buffer;

  private final Sink sink;

  NativeLogBridge() {
    this(SLF4J);
  }

  NativeLogBridge(Sink sink) {
    this.sink = sink;
  }

  /** The native level code (0 off .. 5 TRACE) matching what the sink would print. */
  int maxLevel() {
    return sink.maxLevel();
  }

  /** Drains the queue of {@code handle} (0: the global queue) into SLF4J. */
  void drain(long handle) {
    if (buffer == null) {
      buffer = DirectBuffers.take(BUFFER_BYTES);
    }
    for (int round = 0; round < MAX_ROUNDS; round++) {
      int written = NativeEngine.drainLogs(handle, buffer);
      long dropped = buffer.getLong(8);
      if (dropped > 0) {
        sink.log(
            2,
            "sharesink_jni",
            dropped + " native log lines were dropped: the native log queue was full");
      }
      int pos = 16;
      for (int i = 0; i < written; i++) {
        int level = buffer.getInt(pos);
        int targetLength = buffer.getInt(pos + 4);
        String target = utf8(pos + 8, targetLength);
        pos += 8 + targetLength;
        int textLength = buffer.getInt(pos);
        String text = utf8(pos + 4, textLength);
        pos += 4 + textLength;
        sink.log(level, target, text);
      }
      if (written == 0 || buffer.getInt(4) == 0) {
        return;
      }
    }
  }

  /** Gives the buffer back to the pool (a later drain takes one again). */
  void release() {
    DirectBuffers.give(buffer);
    buffer = null;
  }

  private String utf8(int position, int length) {
    byte[] bytes = new byte[length];
    buffer.get(position, bytes);
    return new String(bytes, StandardCharsets.UTF_8);
  }

  static Logger loggerFor(String target) {
    return loggers.computeIfAbsent(
        target, t -> LoggerFactory.getLogger(LOGGER_PREFIX + "." + t.replace("::", ".")));
  }
}
