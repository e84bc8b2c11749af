package io.sharesink.connect.sink;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.RetriableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sink runtime's error handling, redone for share records: retries of retriable converter and
 * transform failures ({@code errors.retry.*}), error logging ({@code errors.log.*}) and the dead
 * letter queue. Where the DLQ record comes from is a choice made when wiring the connector: written
 * here by our own producer ({@link DeadLetterQueue}), or by the broker itself when the share
 * group's KIP-1191 DLQ is configured, in which case REJECT alone is enough.
 */
public final class ErrorHandling implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ErrorHandling.class);
  private static final long RETRY_DELAY_MIN_MS = 300;

  /** A record failed in a stage and tolerance, retries or both are exhausted. */
  public static final class RecordFailedException extends RuntimeException {
    private final ErrorStage stage;
    private final Class<?> executingClass;

    RecordFailedException(ErrorStage stage, Class<?> executingClass, Throwable cause) {
      super(cause);
      this.stage = stage;
      this.executingClass = executingClass;
    }

    public ErrorStage stage() {
      return stage;
    }

    public Class<?> executingClass() {
      return executingClass;
    }
  }

  private final SinkDriverConfig config;
  private final String taskName;
  private final DeadLetterQueue deadLetterQueue;
  private final boolean brokerWritesDeadLetters;
  // read once: execute() runs for every record and stage
  private final long retryTimeoutMs;
  private final long retryMaxDelayMs;
  private final Time time;

  /**
   * @param deadLetterQueue our own DLQ writer, or null when there is none
   * @param brokerWritesDeadLetters the share group's DLQ copies REJECTed records: nothing to write
   * @param time the clock retries are timed and slept with
   */
  public ErrorHandling(
      SinkDriverConfig config,
      String taskName,
      DeadLetterQueue deadLetterQueue,
      boolean brokerWritesDeadLetters,
      Time time) {
    this.time = time;
    this.config = config;
    this.taskName = taskName;
    this.deadLetterQueue = brokerWritesDeadLetters ? null : deadLetterQueue;
    this.brokerWritesDeadLetters = brokerWritesDeadLetters;
    this.retryTimeoutMs = config.retryTimeoutMs();
    this.retryMaxDelayMs = config.retryMaxDelayMs();
    if (deadLetterQueue == null && !brokerWritesDeadLetters && !config.dlqTopic().isEmpty()) {
      log.warn(
          "{}: {} is set but no dead letter queue writer was given; failed records are only"
              + " REJECTed",
          taskName,
          SinkDriverConfig.DLQ_TOPIC_CONFIG);
    }
  }

  public boolean toleranceAll() {
    return config.toleranceAll();
  }

  public boolean brokerWritesDeadLetters() {
    return brokerWritesDeadLetters;
  }

  /**
   * Runs one stage of the conversion pipeline, retrying {@link RetriableException} with exponential
   * backoff from 300 ms (capped by {@code errors.retry.delay.max.ms}, random below the cap once
   * reached) for up to {@code errors.retry.timeout}, as the runtime does. Any failure left over
   * becomes a {@link RecordFailedException}.
   */
  public <T> T execute(
      ErrorStage stage, Class<?> executingClass, Supplier<T> operation, BooleanSupplier stopping) {
    long retryTimeout = retryTimeoutMs;
    long start = time.milliseconds();
    long deadline = retryTimeout < 0 ? Long.MAX_VALUE : start + retryTimeout;
    int attempt = 0;
    while (true) {
      attempt++;
      try {
        return operation.get();
      } catch (RetriableException e) {
        long now = time.milliseconds();
        if (now >= deadline || stopping.getAsBoolean()) {
          throw new RecordFailedException(stage, executingClass, e);
        }
        log.debug("{}: retriable failure in {} (attempt {})", taskName, stage, attempt, e);
        long delay = RETRY_DELAY_MIN_MS << Math.min(attempt - 1, 20);
        long maxDelay = retryMaxDelayMs;
        if (delay > maxDelay) {
          delay = ThreadLocalRandom.current().nextLong(maxDelay);
        }
        delay = Math.min(delay, deadline - now);
        time.sleep(Math.max(0, delay));
        if (Thread.currentThread().isInterrupted()) {
          throw new RecordFailedException(stage, executingClass, e);
        }
      } catch (RuntimeException e) {
        throw new RecordFailedException(stage, executingClass, e);
      }
    }
  }

  /**
   * Handles a record that is to be REJECTed: logs it when {@code errors.log.enable} is on, writes
   * it to the dead letter queue when we write one. The future completes when the DLQ write is
   * acknowledged (at once when there is nothing to write); only then may the record be REJECTed.
   */
  public CompletableFuture<Void> report(
      RawRecord record, ErrorStage stage, Class<?> executingClass, Throwable error) {
    if (config.logErrors()) {
      logFailure(record, stage, executingClass, error);
    }
    if (deadLetterQueue == null) {
      return CompletableFuture.completedFuture(null);
    }
    return deadLetterQueue.write(record, stage, executingClass, error);
  }

  /** Logs a failure in the runtime's LogReporter style. */
  public void logFailure(
      RawRecord record, ErrorStage stage, Class<?> executingClass, Throwable error) {
    StringBuilder message = new StringBuilder();
    message
        .append("Error encountered in task ")
        .append(taskName)
        .append(". Executing stage '")
        .append(stage)
        .append("' with class '")
        .append(executingClass.getName())
        .append('\'');
    if (config.logIncludeMessages() && record != null) {
      message
          .append(", where consumed record is {topic='")
          .append(record.topic())
          .append("', partition=")
          .append(record.partition())
          .append(", offset=")
          .append(record.offset())
          .append(", timestamp=")
          .append(record.timestamp())
          .append(", timestampType=")
          .append(record.timestampType())
          .append(", deliveryCount=")
          .append(record.deliveryCount())
          .append('}');
    }
    message.append('.');
    log.error(message.toString(), error);
  }

  @Override
  public void close() {
    if (deadLetterQueue != null) {
      deadLetterQueue.close();
    }
  }
}
