package io.sharesink.engine.kafka;

import io.sharesink.engine.AckResult;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.EngineException;
import io.sharesink.engine.EngineMetrics;
import io.sharesink.engine.ShareBatch;
import io.sharesink.engine.ShareConsumerEngine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.ShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link ShareConsumerEngine} over the worker's own {@link KafkaShareConsumer}: the fallback on
 * platforms without the native library, and a second engine to test the adapter against.
 *
 * <p>The Java client runs in explicit acknowledgement mode, which has two rules that the engine
 * interface does not: every record of a poll must be acknowledged before the next poll, and only
 * records of the last poll can be acknowledged. The driver, though, holds records across many polls
 * (a sink buffers until its flush). So before each poll, every record of the last poll that the
 * driver has not decided on is acknowledged with RENEW (KIP-1222); a renewed record comes back from
 * a later poll, is recognised as still held and not handed out again, and is renewed again or gets
 * the driver's decision then. A decision the driver makes while its record is away (renewed, not
 * yet returned) is kept and applied when the record comes back. RENEWs requested by the driver are
 * therefore redundant on the polling thread. The cost: every held record is renewed on every poll.
 *
 * <p>Threading: the Connect task thread polls and decides; the driver's lock keeper asks for RENEWs
 * from its own thread while the task thread is busy elsewhere (a put that blocks). The Java client
 * may be used from several threads one at a time, so every use of it holds {@link #lock}, and a
 * RENEW from another thread, when the consumer is free, renews every held record at once: it brings
 * back the records away being renewed with a zero-wait poll and renews them, and everything of the
 * last poll, again (new records met meanwhile wait for the next {@link #poll}).
 */
public final class KafkaShareConsumerEngine implements ShareConsumerEngine {

  private static final Logger log = LoggerFactory.getLogger(KafkaShareConsumerEngine.class);

  /**
   * The close budget when the caller names none, the native engine's default {@code
   * share.close.timeout.ms}: a task passes its own (StopBudget.ENGINE_CLOSE in the connect
   * package), so that it stops within Connect's shutdown grace when the broker does not answer. A
   * third of it waits for deferred decisions, the rest for the consumer's own close.
   */
  static final Duration DEFAULT_CLOSE_TIMEOUT = Duration.ofSeconds(3);

  /** The broker's group default for share.record.lock.duration.ms. */
  private static final int DEFAULT_LOCK_MS = 30_000;

  private record Key(String topic, int partition, long offset) {}

  private static int deliveryCount(ConsumerRecord<?, ?> record) {
    return record.deliveryCount().map(Short::intValue).orElse(1);
  }

  /** A decision made while its record was away being renewed. */
  private record Deferred(AckType type, long decidedAtMs) {}

  private final ShareConsumer<byte[], byte[]> consumer;
  private final String name;

  /**
   * Records of the last consumer poll not acknowledged yet (all must be before the next). The
   * record objects are kept: the client acknowledges delivered records only through them (its
   * acknowledge by topic/partition/offset is for records that failed deserialization).
   */
  private final Map<Key, ConsumerRecord<byte[], byte[]>> lastPollUnacknowledged =
      new LinkedHashMap<>();

  /**
   * When the consumer poll that returned {@link #lastPollUnacknowledged} ended: their locks' start.
   */
  private long lastPollEndMs;

  /**
   * Records handed to the driver and not decided on by it, with the delivery count they were handed
   * out with: a record coming back with the same count is a renewal, one with a higher count a new
   * delivery (the driver forgot the old one when its lock ran out).
   */
  private final Map<Key, Integer> heldByDriver = new HashMap<>();

  /** Guards every use of the consumer, see the class comment. */
  private final ReentrantLock lock = new ReentrantLock();

  private final Time time;

  /**
   * How long {@link #close} waits for deferred decisions; the rest of its budget: {@link
   * #closeTimeout}.
   */
  private final Duration closeDrain;

  private final Duration closeTimeout;

  /** The thread of the latest poll: a RENEW it asks for is redundant (it renews at each poll). */
  private volatile Thread pollThread;

  private final Map<Key, Deferred> deferred = new LinkedHashMap<>();

  /**
   * A subscription asked for and not yet given to the consumer: applied under {@link #lock} right
   * before the consumer's next poll, after the renewals that poll needs, so the change never meets
   * the consumer in the middle of a use by the lock keeper's thread.
   */
  private final AtomicReference<List<String>> pendingSubscription = new AtomicReference<>();

  /** Records polled while draining for acknowledgeSync, handed out by the next poll. */
  private final List<ConsumerRecord<byte[], byte[]>> undelivered = new ArrayList<>();

  private final AtomicLong recordsFetched = new AtomicLong();
  private final AtomicLong bytesFetched = new AtomicLong();
  private final AtomicLong accepted = new AtomicLong();
  private final AtomicLong released = new AtomicLong();
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong renewed = new AtomicLong();
  private final AtomicLong ackErrors = new AtomicLong();
  private final AtomicLong polls = new AtomicLong();
  private final AtomicLong pollNanos = new AtomicLong();
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong commitNanos = new AtomicLong();
  private volatile boolean closed;

  /**
   * Creates a member of share group {@code group.id} subscribed to {@code topics}.
   *
   * @param consumerConfig client settings: {@code bootstrap.servers}, {@code group.id}, security;
   *     deserializers and the acknowledgement mode are set here
   */
  public KafkaShareConsumerEngine(Map<String, Object> consumerConfig, Collection<String> topics) {
    this(consumerConfig, topics, Time.SYSTEM, DEFAULT_CLOSE_TIMEOUT);
  }

  /**
   * As {@link #KafkaShareConsumerEngine(Map, Collection)}, on the clock {@code time}, with {@code
   * closeTimeout} as the whole budget of {@link #close}.
   */
  public KafkaShareConsumerEngine(
      Map<String, Object> consumerConfig,
      Collection<String> topics,
      Time time,
      Duration closeTimeout) {
    this(newConsumer(consumerConfig), clientName(consumerConfig), topics, time, closeTimeout);
  }

  /** An engine over {@code consumer} (explicit acknowledgement mode), named {@code name}. */
  KafkaShareConsumerEngine(
      ShareConsumer<byte[], byte[]> consumer, String name, Collection<String> topics, Time time) {
    this(consumer, name, topics, time, DEFAULT_CLOSE_TIMEOUT);
  }

  private KafkaShareConsumerEngine(
      ShareConsumer<byte[], byte[]> consumer,
      String name,
      Collection<String> topics,
      Time time,
      Duration closeTimeout) {
    this.time = time;
    this.closeDrain = closeTimeout.dividedBy(3);
    this.closeTimeout = closeTimeout.minus(closeDrain);
    this.name = name;
    this.consumer = consumer;
    consumer.setAcknowledgementCommitCallback(
        (offsets, exception) -> {
          if (exception != null) {
            long count = offsets.values().stream().mapToLong(Set::size).sum();
            ackErrors.addAndGet(count);
            log.debug("{}: acknowledgement of {} records failed", name, count, exception);
          }
        });
    consumer.subscribe(List.copyOf(topics));
  }

  private static ShareConsumer<byte[], byte[]> newConsumer(Map<String, Object> consumerConfig) {
    Map<String, Object> config = new HashMap<>(consumerConfig);
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
    config.put("share.acknowledgement.mode", "explicit");
    if (!config.containsKey(ConsumerConfig.GROUP_ID_CONFIG)) {
      throw new EngineException(EngineException.Kind.CONFIG, "group.id is required");
    }
    try {
      return new KafkaShareConsumer<>(config);
    } catch (KafkaException e) {
      throw translate("creating the share consumer", e);
    }
  }

  private static String clientName(Map<String, Object> config) {
    Object name = config.getOrDefault(ConsumerConfig.CLIENT_ID_CONFIG, config.get("group.id"));
    return String.valueOf(name);
  }

  @Override
  public ShareBatch poll(Duration timeout) {
    ensureOpen();
    pollThread = Thread.currentThread();
    lock.lock();
    try {
      List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>(undelivered);
      List<Long> deadlines = new ArrayList<>();
      long lockMs = lockDurationMs();
      long now = time.milliseconds();
      for (int i = 0; i < out.size(); i++) {
        deadlines.add(now + lockMs); // renewed at the poll that moved them here
      }
      undelivered.clear();
      if (out.isEmpty()) {
        ConsumerRecords<byte[], byte[]> records = pollConsumer(timeout);
        now = time.milliseconds();
        lockMs = lockDurationMs();
        for (ConsumerRecord<byte[], byte[]> record : records) {
          if (takeIn(record)) {
            out.add(record);
            deadlines.add(now + lockMs);
          }
        }
      }
      return new RecordListBatch(out, deadlines);
    } finally {
      lock.unlock();
    }
  }

  /**
   * Registers one polled record. Returns true when it is new to the driver; a record the driver
   * still holds (a renewal coming back) or one with a deferred decision is not handed out.
   */
  private boolean takeIn(ConsumerRecord<byte[], byte[]> record) {
    Key key = new Key(record.topic(), record.partition(), record.offset());
    Integer held = heldByDriver.get(key);
    if (held != null && deliveryCount(record) > held) {
      // Delivered again: the lock of the copy the driver had ran out, and the driver forgot it
      // (it acknowledges nothing whose lock it lost). A decision made for that copy is void.
      heldByDriver.remove(key);
      deferred.remove(key);
      held = null;
    }
    Deferred decision = deferred.remove(key);
    if (decision != null) {
      heldByDriver.remove(key);
      lastPollUnacknowledged.remove(key);
      acknowledgeNow(record, decision.type);
      return false;
    }
    if (held != null) {
      return false; // renewed and returned: the driver already has it
    }
    heldByDriver.put(key, deliveryCount(record));
    recordsFetched.incrementAndGet();
    bytesFetched.addAndGet(
        Math.max(0, record.serializedKeySize()) + Math.max(0, record.serializedValueSize()));
    return true;
  }

  private ConsumerRecords<byte[], byte[]> pollConsumer(Duration timeout) {
    // Explicit mode: everything of the last poll must be acknowledged first. What the driver has
    // not decided on is renewed and will come back, or released once its lock ran out.
    renewOrReleaseLastPoll();
    pruneDeferred();
    applyPendingSubscription();
    long start = time.nanoseconds();
    ConsumerRecords<byte[], byte[]> records;
    try {
      records = consumer.poll(timeout);
    } catch (WakeupException e) {
      return ConsumerRecords.empty();
    } catch (KafkaException e) {
      throw translate("poll", e);
    } finally {
      polls.incrementAndGet();
      pollNanos.addAndGet(time.nanoseconds() - start);
    }
    lastPollEndMs = time.milliseconds();
    for (ConsumerRecord<byte[], byte[]> record : records) {
      lastPollUnacknowledged.put(
          new Key(record.topic(), record.partition(), record.offset()), record);
    }
    return records;
  }

  /**
   * Acknowledges what is left of the last consumer poll: RENEW while its lock runs, RELEASE once it
   * ran out by this clock. The driver forgets a record whose lock ran out; renewed, it came back as
   * a renewal of a record the driver "holds" and was never handed out again, renewed at every poll
   * for good, whenever the broker had not yet expired it when the renewal arrived (seen in CI: a
   * record held 16 s under a 15 s lock never came back). Released, it is delivered again and handed
   * out as new.
   */
  private void renewOrReleaseLastPoll() {
    boolean lockRanOut = time.milliseconds() - lastPollEndMs >= lockDurationMs();
    for (Map.Entry<Key, ConsumerRecord<byte[], byte[]>> e : lastPollUnacknowledged.entrySet()) {
      if (lockRanOut) {
        heldByDriver.remove(e.getKey());
        acknowledgeNow(e.getValue(), AckType.RELEASE);
      } else {
        acknowledgeNow(e.getValue(), AckType.RENEW);
      }
    }
    lastPollUnacknowledged.clear();
  }

  /**
   * Queues the new subscription for the next consumer poll: the client is used by one thread at a
   * time, and its {@code subscribe} replaces the whole subscription, as wanted here.
   */
  @Override
  public void subscribe(Collection<String> topics) {
    if (topics.isEmpty()) {
      // The Java client would read an empty list as unsubscribe() and leave the group.
      throw new EngineException(
          EngineException.Kind.CONFIG, "at least one topic is required to subscribe");
    }
    ensureOpen();
    pendingSubscription.set(List.copyOf(topics));
  }

  /** Called with {@link #lock} held, before a consumer poll. */
  private void applyPendingSubscription() {
    List<String> topics = pendingSubscription.getAndSet(null);
    if (topics == null) {
      return;
    }
    try {
      consumer.subscribe(topics);
    } catch (KafkaException e) {
      throw translate("subscribe", e);
    }
    log.info("{}: subscription changed to {}", name, topics);
  }

  /** Forgets decisions whose record has not come back for two lock durations: it never will. */
  private void pruneDeferred() {
    long cutoff = time.milliseconds() - 2L * lockDurationMs();
    for (Iterator<Deferred> it = deferred.values().iterator(); it.hasNext(); ) {
      if (it.next().decidedAtMs < cutoff) {
        it.remove();
      }
    }
  }

  private long lockDurationMs() {
    try {
      return consumer.acquisitionLockTimeoutMs().orElse(DEFAULT_LOCK_MS);
    } catch (RuntimeException e) {
      return DEFAULT_LOCK_MS;
    }
  }

  @Override
  public void acknowledge(Acknowledgements acks) {
    ensureOpen();
    boolean renews = false;
    boolean settles = false;
    for (Acknowledgements.Range range : acks.ranges()) {
      renews |= range.type() == AckType.RENEW;
      settles |= range.type() != AckType.RENEW;
    }
    // A RENEW from the polling thread is redundant (it renews everything at each poll); from
    // another thread it means the polling thread is busy elsewhere: renew now if the consumer is
    // free (if it is not, the polling thread is inside a poll, which renews).
    boolean renewNow = renews && Thread.currentThread() != pollThread;
    if (settles) {
      lock.lock();
    } else if (!renewNow || !lock.tryLock()) {
      return;
    }
    try {
      settle(acks);
      if (renewNow && !closed) {
        renewHeld();
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * The driver dropped these records (their lock had run out, or had under a second left, by its
   * clock). Kept in {@link #heldByDriver} they would be renewed on every poll and, coming back from
   * each renewal, never handed out again: held for ever. Forgotten here, a record still in the last
   * poll is renewed (or released, once its lock ran out) like any other, and handed out again as
   * new when it comes back, or when the broker delivers it again.
   */
  @Override
  public void forgotten(String topic, int partition, List<Long> offsets) {
    lock.lock();
    try {
      for (long offset : offsets) {
        heldByDriver.remove(new Key(topic, partition, offset));
      }
    } finally {
      lock.unlock();
    }
  }

  private void settle(Acknowledgements acks) {
    for (Acknowledgements.Range range : acks.ranges()) {
      if (range.type() == AckType.RENEW) {
        continue;
      }
      for (long offset = range.firstOffset(); offset <= range.lastOffset(); offset++) {
        Key key = new Key(range.topic(), range.partition(), offset);
        heldByDriver.remove(key);
        ConsumerRecord<byte[], byte[]> record = lastPollUnacknowledged.remove(key);
        if (record != null) {
          acknowledgeNow(record, range.type());
        } else {
          deferred.put(key, new Deferred(range.type(), time.milliseconds()));
        }
      }
    }
  }

  /**
   * Renews every record the driver holds, off the polling thread: what the last poll returned is
   * renewed by the zero-wait poll that also brings back the records whose renewal completed, and
   * those are renewed at once too and sent without waiting for the next poll. New records met are
   * kept for the next {@link #poll}, renewed like the rest meanwhile.
   */
  private void renewHeld() {
    for (ConsumerRecord<byte[], byte[]> record : pollConsumer(Duration.ZERO)) {
      if (takeIn(record)) {
        undelivered.add(record);
      }
    }
    renewOrReleaseLastPoll();
    try {
      consumer.commitAsync();
    } catch (KafkaException e) {
      log.debug("{}: sending renewals failed", name, e);
    }
  }

  private void acknowledgeNow(ConsumerRecord<byte[], byte[]> record, AckType type) {
    try {
      consumer.acknowledge(record, toKafka(type));
    } catch (IllegalStateException e) {
      // The client no longer holds it (its partition moved away, its session was lost): the
      // broker will redeliver it; nothing the driver can do.
      ackErrors.incrementAndGet();
      log.debug(
          "{}: cannot acknowledge {}-{}@{}",
          name,
          record.topic(),
          record.partition(),
          record.offset(),
          e);
      return;
    }
    switch (type) {
      case ACCEPT -> accepted.incrementAndGet();
      case RELEASE -> released.incrementAndGet();
      case REJECT -> rejected.incrementAndGet();
      case RENEW -> renewed.incrementAndGet();
    }
  }

  private static AcknowledgeType toKafka(AckType type) {
    return switch (type) {
      case ACCEPT -> AcknowledgeType.ACCEPT;
      case RELEASE -> AcknowledgeType.RELEASE;
      case REJECT -> AcknowledgeType.REJECT;
      case RENEW -> AcknowledgeType.RENEW;
    };
  }

  @Override
  public List<AckResult> acknowledgeSync(Acknowledgements acks, Duration timeout) {
    ensureOpen();
    lock.lock();
    try {
      return acknowledgeSyncLocked(acks, timeout);
    } finally {
      lock.unlock();
    }
  }

  private List<AckResult> acknowledgeSyncLocked(Acknowledgements acks, Duration timeout) {
    long deadline = time.nanoseconds() + timeout.toNanos();
    acknowledge(acks);
    drainDeferred(deadline);
    Map<TopicIdPartition, Optional<KafkaException>> results;
    long start = time.nanoseconds();
    try {
      results =
          consumer.commitSync(Duration.ofNanos(Math.max(1_000_000, deadline - time.nanoseconds())));
    } catch (WakeupException e) {
      results = Map.of();
    } catch (KafkaException e) {
      throw translate("commitSync", e);
    } finally {
      commits.incrementAndGet();
      commitNanos.addAndGet(time.nanoseconds() - start);
    }
    Map<TopicPartition, KafkaException> failures = new HashMap<>();
    results.forEach((tip, error) -> error.ifPresent(e -> failures.put(tip.topicPartition(), e)));
    List<AckResult> out = new ArrayList<>(acks.size());
    for (Acknowledgements.Range range : acks.ranges()) {
      if (range.type() == AckType.RENEW) {
        out.add(new AckResult(range, (short) 0, null));
        continue;
      }
      KafkaException failure = failures.get(new TopicPartition(range.topic(), range.partition()));
      if (failure != null) {
        out.add(new AckResult(range, Errors.forException(failure).code(), failure.getMessage()));
      } else if (range.type() != AckType.RELEASE && isDeferred(range)) {
        out.add(
            new AckResult(
                range,
                Errors.INVALID_RECORD_STATE.code(),
                "renewed record did not come back in time; its lock will expire"));
      } else {
        out.add(new AckResult(range, (short) 0, null));
      }
    }
    return out;
  }

  /**
   * Decisions on records away being renewed can only be sent once the records come back: polls
   * until every deferred decision is applied or {@code deadlineNanos} passes. New records met
   * meanwhile are kept for the next {@link #poll} (or released by {@link #close}).
   */
  private void drainDeferred(long deadlineNanos) {
    while (hasDeferredToSend() && time.nanoseconds() < deadlineNanos) {
      long leftMs = Math.max(1, (deadlineNanos - time.nanoseconds()) / 1_000_000);
      for (ConsumerRecord<byte[], byte[]> record :
          pollConsumer(Duration.ofMillis(Math.min(leftMs, 100)))) {
        if (takeIn(record)) {
          undelivered.add(record);
        }
      }
    }
  }

  /** Deferred RELEASEs are not worth waiting for: closing releases those records anyway. */
  private boolean hasDeferredToSend() {
    for (Deferred decision : deferred.values()) {
      if (decision.type != AckType.RELEASE) {
        return true;
      }
    }
    return false;
  }

  private boolean isDeferred(Acknowledgements.Range range) {
    for (long offset = range.firstOffset(); offset <= range.lastOffset(); offset++) {
      if (deferred.containsKey(new Key(range.topic(), range.partition(), offset))) {
        return true;
      }
    }
    return false;
  }

  @Override
  public void wakeup() {
    consumer.wakeup();
  }

  @Override
  public EngineMetrics metrics() {
    long pollCount = polls.get();
    long commitCount = commits.get();
    return new EngineMetrics(
        recordsFetched.get(),
        bytesFetched.get(),
        accepted.get(),
        released.get(),
        rejected.get(),
        renewed.get(),
        ackErrors.get(),
        pollCount,
        pollCount == 0 ? 0 : pollNanos.get() / 1e6 / pollCount,
        commitCount == 0 ? 0 : commitNanos.get() / 1e6 / commitCount,
        heldByDriver.size(),
        // The native engine's own counters: a Java share consumer has none of them.
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0);
  }

  /**
   * Closes the consumer: pending acknowledgements are sent (decisions on records away being renewed
   * first wait, briefly, for them to come back) and every record still acquired (everything the
   * driver did not decide on) is released at once.
   */
  @Override
  public void close() {
    lock.lock();
    try {
      closeLocked();
    } finally {
      lock.unlock();
    }
  }

  private void closeLocked() {
    if (closed) {
      return;
    }
    try {
      drainDeferred(time.nanoseconds() + closeDrain.toNanos());
    } catch (RuntimeException e) {
      log.warn("{}: could not apply {} deferred acknowledgements", name, deferred.size(), e);
    }
    if (hasDeferredToSend()) {
      log.warn(
          "{}: {} acknowledgements dropped: their records did not come back from renewal",
          name,
          deferred.size());
    }
    closed = true;
    try {
      consumer.close(closeTimeout);
    } catch (RuntimeException e) {
      log.warn("{}: closing the share consumer failed", name, e);
    }
  }

  private void ensureOpen() {
    if (closed) {
      throw new EngineException(EngineException.Kind.CLOSED, name + " is closed");
    }
  }

  private static EngineException translate(String what, KafkaException e) {
    EngineException.Kind kind;
    if (e instanceof AuthenticationException) {
      kind = EngineException.Kind.AUTHENTICATION;
    } else if (e instanceof AuthorizationException) {
      kind = EngineException.Kind.AUTHORIZATION;
    } else if (e instanceof InterruptException) {
      kind = EngineException.Kind.CLOSED;
    } else if (e instanceof org.apache.kafka.common.errors.RetriableException) {
      kind = EngineException.Kind.CONNECTION;
    } else if (e instanceof org.apache.kafka.common.config.ConfigException) {
      kind = EngineException.Kind.CONFIG;
    } else {
      kind = EngineException.Kind.INTERNAL;
    }
    return new EngineException(kind, what + ": " + e.getMessage(), e);
  }
}
