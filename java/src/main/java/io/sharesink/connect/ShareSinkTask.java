package io.sharesink.connect;

import io.sharesink.connect.sink.ShareSinkDriver;
import io.sharesink.connect.sink.StopBudget;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hosts one legacy {@link SinkTask} as a share-group member. {@code start()} joins the share group
 * through the chosen engine and starts the legacy task through the {@link ShareSinkDriver}; each
 * {@code poll()} runs one bounded share cycle (poll, convert, put, commit, acknowledge) on the
 * worker's task thread and returns {@code null}: nothing is ever produced.
 *
 * <p>Stop: the Kafka 4.x runtime calls {@code stop()} on the task thread after its poll loop has
 * ended ({@code AbstractWorkerSourceTask.close()}), so the cleanup runs there directly. Older
 * runtimes, and the {@code SourceTask} javadoc, allow a call from another thread during a poll:
 * then {@code stop()} wakes the engine, waits for the running cycle to return (it does within the
 * poll timeout) and cleans up after it, never concurrently. Cleanup stops the driver (final commit,
 * RELEASE of what is not ACCEPTed, {@code close()} and {@code stop()} of the legacy task) and
 * closes the engine, which ends the share sessions so unacknowledged records return to the group at
 * once.
 *
 * <p>PAUSE: the runtime stops calling {@code poll()}; the member stays in the group, and the
 * driver's lock keeper goes on renewing the records the task holds for up to {@code
 * share.task.stuck.timeout.ms}, then releases them to other members (or to this one after RESUME),
 * a redelivery that at-least-once allows.
 *
 * <p>Its jobs are its parts': {@link ShareMemberStarter} builds the member (engine, legacy task,
 * driver; a {@link ShareMember} once started), {@link TopicPatternFollower} follows {@code
 * topics.regex}, and {@link CycleGate} lets one cycle or the cleanup run at a time.
 *
 * <p>Time: one {@link Time} (the constructor's, the system clock in a worker) reaches the driver,
 * the engines, the topic pattern's checks and every wait of the task; how long a stop may take is
 * {@link StopBudget}. Waits are {@link Time#waitObject}: timed monitor waits on the system clock,
 * ended on a {@code MockTime} by their condition or by a test moving the clock.
 */
public class ShareSinkTask extends SourceTask {

  private static final Logger log = LoggerFactory.getLogger(ShareSinkTask.class);

  /** The task's clock, handed to everything the task makes. */
  private final Time time;

  /** The clock, the lock keeper, the worker's configuration, the engines; fixed at construction. */
  private final TaskWiring wiring;

  /** Guards the member: one cycle, or the cleanup, at a time. */
  private final CycleGate gate;

  private volatile boolean stopRequested;
  private boolean cleanedUp;

  /** The share-group member, once it joined; null before and after. */
  private volatile ShareMember member;

  /** Joins the group on the given topics and starts the legacy task; set by start(). */
  private ShareMemberStarter memberStarter;

  /** {@code topics.regex}, when set; followed on the task thread, woken by stop(). */
  private volatile TopicPatternFollower topicFollower;

  private Duration pollTimeout = Duration.ofMillis(ShareSinkConfig.POLL_TIMEOUT_MS_DEFAULT);
  private String taskName = "sharesink";

  /** The task Connect instantiates: on the system clock, with the worker's parts. */
  public ShareSinkTask() {
    this(TaskWiring.system());
  }

  /** A task on {@code wiring} (in tests: a {@code MockTime}, their own engines). */
  ShareSinkTask(TaskWiring wiring) {
    this.wiring = wiring;
    this.time = wiring.time();
    this.gate = new CycleGate(time);
  }

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void start(Map<String, String> props) {
    ShareSinkConfig config = new ShareSinkConfig(props);
    String connectorName = props.getOrDefault(ShareSinkConfig.CONNECTOR_NAME_CONFIG, "sharesink");
    int taskId = parseTaskId(props.get(ShareSinkConfig.TASK_ID_CONFIG));
    taskName = connectorName + "-" + taskId;
    pollTimeout = Duration.ofMillis(config.pollTimeoutMs());
    String groupId = config.groupId(connectorName);

    WorkerDefaults worker = WorkerDefaults.atStart(time, wiring.workerDefaults());
    StartChecks checked =
        StartChecks.run(
            config,
            props,
            connectorName,
            worker,
            BootstrapServers.HostResolver.DNS,
            StartChecks.Order.SKIP);
    memberStarter =
        new ShareMemberStarter(
            config,
            props,
            checked,
            worker,
            connectorName,
            taskId,
            taskName,
            groupId,
            () -> context.pluginMetrics(),
            wiring);
    Optional<Pattern> pattern = config.topicsRegex();
    if (pattern.isEmpty()) {
      member = memberStarter.start(config.topics());
      return;
    }
    TopicPatternFollower follower =
        new TopicPatternFollower(
            wiring
                .topicPatterns()
                .open(pattern.get(), config, checked.clients(), worker, time, taskName),
            time,
            taskName);
    topicFollower = follower;
    // Join at once when the cluster answers quickly; otherwise the poll loop joins later.
    followTopicPattern();
    if (member == null && !follower.resolved()) {
      follower.awaitListing(pollTimeout.toMillis());
      followTopicPattern();
    }
    if (member == null) {
      log.info(
          "{}: no topic matching topics.regex '{}' yet: the task joins share group {} when one"
              + " appears",
          taskName,
          pattern.get(),
          groupId);
    }
  }

  /** Called on the task thread with no cycle running: applies what the pattern matches now. */
  private void followTopicPattern() {
    TopicPatternFollower follower = topicFollower;
    if (follower == null || cleanedUp) {
      return;
    }
    member = follower.follow(member, memberStarter);
  }

  private static int parseTaskId(String value) {
    try {
      return value == null ? 0 : Integer.parseInt(value.trim());
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /**
   * One share cycle, bounded by {@code share.poll.timeout.ms} (at most 5 s, the worker's shutdown
   * grace). Native log lines are drained inside the engine's poll, on this thread, so they carry
   * the task's {@code connector.context}.
   */
  @Override
  public List<SourceRecord> poll() {
    if (stopRequested) {
      return null;
    }
    gate.enter();
    try {
      if (stopRequested) {
        return null;
      }
      followTopicPattern();
      ShareMember current = member;
      if (current == null) {
        TopicPatternFollower follower = topicFollower;
        if (follower != null) {
          follower.awaitNextCheck(pollTimeout.toMillis(), () -> stopRequested);
        }
        return null;
      }
      current.runCycle(pollTimeout);
    } catch (RetriableException e) {
      // The driver's failure is final; the runtime would re-poll a RetriableException forever.
      throw new ConnectException(e.getMessage(), e);
    } finally {
      try {
        if (stopRequested) {
          // A stop() from another thread that gave up waiting for this cycle left it to us.
          cleanUp();
        }
      } finally {
        gate.leave();
      }
    }
    return null;
  }

  /** Nothing to commit: sharesink produces no records and acknowledges in poll(). */
  @Override
  public void commit() {}

  /**
   * Stops the share member. Safe from the task thread after the poll loop (Kafka 4.x) and from
   * another thread during a poll: the cycle is woken and the cleanup waits for it.
   */
  @Override
  public void stop() {
    // A cycle returns within the poll timeout after the wakeup, unless the legacy task is stuck
    // in put(); then the cycle's own thread cleans up when it returns (see StopBudget).
    long deadlineMs =
        time.milliseconds() + pollTimeout.toMillis() + StopBudget.CYCLE_WAIT_BEYOND_POLL.toMillis();
    stopRequested = true;
    TopicPatternFollower follower = topicFollower;
    if (follower != null) {
      follower.wakeUp();
    }
    ShareMember current = member;
    if (current != null) {
      current.wakeup();
    }
    if (!gate.enter(deadlineMs)) {
      log.warn(
          "{}: the running share cycle did not return in time; it stops the task when it does",
          taskName);
      return;
    }
    try {
      cleanUp();
    } finally {
      gate.leave();
    }
  }

  /** Called inside the gate; idempotent. */
  private void cleanUp() {
    if (cleanedUp) {
      return;
    }
    cleanedUp = true;
    ShareMember current = member;
    member = null;
    TopicPatternFollower follower = topicFollower;
    if (follower != null) {
      follower.close();
      topicFollower = null;
    }
    if (current != null) {
      current.stop();
    }
    log.info("{}: share member stopped", taskName);
  }
}
