package io.sharesink.engine;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.OptionalLong;

/**
 * One share-group member, as the Connect adapter sees it. The adapter knows nothing of the wire
 * protocol: it polls batches and acknowledges offset ranges.
 *
 * <p>Threading: {@link #poll}, {@link #acknowledgeSync} and {@link #close} are called from one
 * thread (the Connect task thread). {@link #acknowledge} is called from that thread and also from
 * the driver's lock keeper, to RENEW held records while the task thread is busy in a call that
 * blocks: implementations must accept it from any thread, and keep the order of acknowledgements
 * queued from one thread. {@link #wakeup} may be called from any thread and makes a blocked {@link
 * #poll} return an empty batch promptly. {@link #subscribe} is called from the polling thread.
 */
public interface ShareConsumerEngine extends AutoCloseable {

  /**
   * Waits up to {@code timeout} for acquired records. Returns an empty batch on timeout or wakeup.
   * The returned batch is valid until the next call to {@code poll} or {@code close}.
   */
  ShareBatch poll(Duration timeout);

  /**
   * Queues acknowledgements; they travel with the next fetch (or a separate acknowledge request
   * when no fetch is due). Results of queued acknowledgements show up in {@link #metrics()}.
   */
  void acknowledge(Acknowledgements acks);

  /**
   * The caller no longer holds these records of {@code topic}-{@code partition}: their locks ran
   * out, or had too little time left to acknowledge them safely, and it dropped them without any
   * acknowledgement. An engine that keeps the records it handed out alive on its own (the Java
   * client's renews them on every poll) must stop doing so and hand them out again when they come
   * back, instead of keeping them as records the caller holds. Called from the polling thread.
   */
  default void forgotten(String topic, int partition, List<Long> offsets) {}

  /** Sends the acknowledgements now and waits for the broker's result for each range. */
  List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout);

  /**
   * Replaces the topics this member subscribes to (a topic pattern re-resolved): the member stays
   * in the group, the new list reaches the group coordinator with the next heartbeat, and the
   * assignment follows. Records already handed out stay valid to acknowledge. Returns at once.
   *
   * @param topics at least one topic name: the broker refuses a member joining with none
   */
  void subscribe(Collection<String> topics);

  /** Makes a blocked {@link #poll} return; callable from any thread. */
  void wakeup();

  /** A snapshot of the engine's counters for this member. */
  EngineMetrics metrics();

  /**
   * Bytes the engine holds outside the Java heap, for every member of this JVM together (one native
   * library serves them all); empty for an engine that keeps everything on the heap.
   */
  default OptionalLong offHeapBytes() {
    return OptionalLong.empty();
  }

  /**
   * Ends every share session (releasing unacknowledged records at once) and leaves the group.
   * Idempotent.
   */
  @Override
  void close();
}
