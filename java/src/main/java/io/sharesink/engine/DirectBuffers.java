package io.sharesink.engine;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * A small JVM-wide pool of the direct buffers native engines exchange data through.
 *
 * <p>Why: the JVM frees a direct buffer's memory only when a garbage collection finds the buffer
 * unreachable, and a Connect worker's heap may go a long time without one. Engines that come and go
 * (task restarts, rebalances of the connector) would otherwise pile up megabytes of native memory
 * each; measured: about 1 MiB of resident memory per create-close cycle without the pool. A closed
 * engine gives its buffers back and the next one takes them.
 *
 * <p>A buffer handed back must no longer be used by its previous owner: a batch view kept past its
 * engine's close would read another engine's records (never freed memory, so never a crash).
 */
final class DirectBuffers {

  private DirectBuffers() {}

  /** Beyond this many pooled bytes, returned buffers are left to the garbage collector. */
  static final long MAX_POOLED_BYTES = 64L << 20;

  private static final List<ByteBuffer> pool = new ArrayList<>();
  private static long pooledBytes;

  /** A cleared little-endian direct buffer of at least {@code minCapacity} bytes. */
  static ByteBuffer take(int minCapacity) {
    synchronized (pool) {
      int best = -1;
      for (int i = 0; i < pool.size(); i++) {
        int capacity = pool.get(i).capacity();
        if (capacity >= minCapacity && (best < 0 || capacity < pool.get(best).capacity())) {
          best = i;
        }
      }
      // Only reuse buffers up to twice the size asked for, so a small user does not pin a big one.
      if (best >= 0 && pool.get(best).capacity() <= 2L * minCapacity) {
        ByteBuffer buffer = pool.remove(best);
        pooledBytes -= buffer.capacity();
        return buffer.clear().order(ByteOrder.LITTLE_ENDIAN);
      }
    }
    return ByteBuffer.allocateDirect(minCapacity).order(ByteOrder.LITTLE_ENDIAN);
  }

  /** Hands a buffer back; its owner must not touch it afterwards. */
  static void give(ByteBuffer buffer) {
    if (buffer == null || !buffer.isDirect()) {
      return;
    }
    synchronized (pool) {
      if (pooledBytes + buffer.capacity() <= MAX_POOLED_BYTES) {
        pool.add(buffer);
        pooledBytes += buffer.capacity();
      }
    }
  }

  static long pooledBytes() {
    synchronized (pool) {
      return pooledBytes;
    }
  }
}
