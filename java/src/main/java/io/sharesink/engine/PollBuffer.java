package io.sharesink.engine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The direct buffer a native poll writes its batch into. It grows when a batch does not fit (one
 * record larger than the buffer: batches are otherwise split to fit), and shrinks back to its base
 * size once {@link #SHRINK_AFTER} batches in a row fit the base size again, so one huge record does
 * not pin a huge buffer for the engine's life. A grown buffer is left to the garbage collector
 * rather than pooled (see {@link DirectBuffers}: the pool serves base-sized buffers).
 *
 * <p>Not thread-safe: the polling thread owns it.
 */
final class PollBuffer {

  /** Batches in a row that fit the base size before a grown buffer shrinks. */
  static final int SHRINK_AFTER = 16;

  private final int baseBytes;
  private ByteBuffer buffer;
  private int fittingInARow;

  PollBuffer(int baseBytes) {
    this.baseBytes = Math.max(baseBytes, BatchLayout.HEADER_BYTES);
    this.buffer = DirectBuffers.take(this.baseBytes);
  }

  /** The buffer for the next poll; the previous batch's views must be dead by now. */
  ByteBuffer forPoll() {
    if (buffer.capacity() > baseBytes && fittingInARow >= SHRINK_AFTER) {
      buffer = DirectBuffers.take(baseBytes); // the grown one is left to the GC
      fittingInARow = 0;
    }
    return buffer;
  }

  /** A batch did not fit: grows to at least {@code needed} bytes (doubling); returns the buffer. */
  ByteBuffer grow(int needed) {
    int capacity = buffer.capacity();
    while (capacity < needed) {
      capacity = capacity > Integer.MAX_VALUE / 2 ? Integer.MAX_VALUE : capacity * 2;
    }
    if (buffer.capacity() <= baseBytes) {
      DirectBuffers.give(buffer);
    }
    buffer = ByteBuffer.allocateDirect(capacity).order(ByteOrder.LITTLE_ENDIAN);
    fittingInARow = 0;
    return buffer;
  }

  /** A batch of {@code usedBytes} was written into the buffer. */
  void written(int usedBytes) {
    if (buffer.capacity() > baseBytes) {
      fittingInARow = usedBytes <= baseBytes ? fittingInARow + 1 : 0;
    }
  }

  int capacity() {
    return buffer.capacity();
  }

  /** Hands the buffer back (at close, from the polling thread or before any poll). */
  void release() {
    if (buffer.capacity() <= baseBytes) {
      DirectBuffers.give(buffer);
    }
    buffer = null;
  }
}
