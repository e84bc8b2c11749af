package io.sharesink.connect.sink;

import java.time.Duration;

/**
 * The stop budget: how long each part of stopping a share task may take, in one place.
 *
 * <p>Connect gives a stopping task {@link #SHUTDOWN_GRACE} (the worker's {@code
 * task.shutdown.graceful.timeout.ms}, 5 s by default) to return; past it the worker logs "Graceful
 * stop of task ... failed" and abandons the task. The stop must fit in it whatever the broker does
 * (a broker that is down answers nothing):
 *
 * <ol>
 *   <li>{@link #FINAL_WAIT}: the driver's last waits, one deadline for both: the DLQ writes still
 *       outstanding, then the synchronous ACCEPTs and REJECTs of the final commit ({@link
 *       ShareSinkDriver#stop}). Acknowledgements not confirmed by then still go out with the
 *       engine's close.
 *   <li>{@link #ENGINE_CLOSE}: the engine's close, which ends the share sessions and releases what
 *       is still held. The task hands it to the engine it opens: the native engine's {@code
 *       share.close.timeout.ms} (unless {@code share.consumer.share.close.timeout.ms} sets it), the
 *       Java client's close (a third of it waits for decisions on records away being renewed, the
 *       rest for the client's own close).
 * </ol>
 *
 * <p>{@code FINAL_WAIT + ENGINE_CLOSE} (4 s) stays below the grace. Two more bounds concern a cycle
 * that does not return (a call into the legacy task that blocks):
 *
 * <ul>
 *   <li>{@code stop()} from another thread than the task's (runtimes before Kafka 4) waits for the
 *       running cycle for the poll timeout ({@code share.poll.timeout.ms}, at most 5 s) plus {@link
 *       #CYCLE_WAIT_BEYOND_POLL}; then it returns, and the cycle's own thread stops the task when
 *       it returns;
 *   <li>a call into the legacy task still running {@link #SHUTDOWN_GRACE} after the stop request no
 *       longer keeps its records: the lock keeper releases them, so they go to the task's successor
 *       rather than wait for the call ({@link LockKeeper}).
 * </ul>
 *
 * <p>Every one of these is measured on the task's {@link org.apache.kafka.common.utils.Time}: a
 * wait is a {@code Time.waitObject} (a timed monitor wait on the system clock), so a test on a
 * {@code MockTime} ends it by moving the mock clock past the deadline or by meeting the condition.
 */
public final class StopBudget {

  private StopBudget() {}

  /** Connect's default {@code task.shutdown.graceful.timeout.ms}: what the whole stop fits in. */
  public static final Duration SHUTDOWN_GRACE = Duration.ofSeconds(5);

  /**
   * The driver's final waits at stop: outstanding DLQ writes, then synchronous acknowledgements.
   */
  public static final Duration FINAL_WAIT = Duration.ofSeconds(1);

  /** The engine's close, after the driver's stop. */
  public static final Duration ENGINE_CLOSE = Duration.ofSeconds(3);

  /** How much longer than a poll timeout {@code stop()} waits for a running cycle. */
  public static final Duration CYCLE_WAIT_BEYOND_POLL = Duration.ofSeconds(4);
}
