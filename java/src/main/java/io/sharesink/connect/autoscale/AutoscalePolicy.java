package io.sharesink.connect.autoscale;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;

/**
 * The autoscaler's rule: how many tasks, from successive {@link GroupReading}s. No I/O and no
 * thread: each {@link #observe} takes the clock's time, so tests drive it with a mock clock and
 * made-up readings.
 *
 * <p>From the readings: the produce rate P (the end offsets' growth over the last interval), the
 * consume rate C (the records the group acknowledged, the end offsets' growth minus the lag's, over
 * at least two commit intervals: a task acknowledges once per commit cycle, so over a shorter span
 * a few tasks' acknowledgements come in lumps), the lag L. The tasks' own state (busy in put or
 * waiting) runs on other workers, out of the connector's sight; what it can see is whether records
 * were waiting for them. A share group hands records to any member that fetches, so while records
 * are <em>available</em> (lag beyond what the running tasks hold in flight: the records being put,
 * buffered, or put and waiting for the commit that acknowledges them) no task waits for records:
 * each is busy with the ones it has. So:
 *
 * <ul>
 *   <li>A <b>backlog</b> = L − (C × commit interval + tasks × 3 × max.poll.records), when positive.
 *   <li><b>Up</b>: a backlog that grows, or would not drain within the drain target at C − P', asks
 *       for ⌈(P' + backlog ÷ drain target) ÷ (C ÷ tasks)⌉ tasks, at least one more, up to tasks.max
 *       in one step; P' is the lower produce rate of the last two intervals, so that a burst is
 *       counted once, in the backlog, not again as a rate. Nothing is added while nothing is
 *       consumed (tasks starting, stopped or failing: more of them would not help), nor after a
 *       step up that did not pay: when two spans of backlog in a row after it consumed less than C
 *       before × (1 + ½ × the share of tasks added), the limit is elsewhere (the sink's target, the
 *       broker), and no more are added until the backlog is gone.
 *   <li><b>One task's rate</b>: C ÷ tasks over spans with a backlog at both ends (every task busy
 *       throughout), smoothed; a span that was not busy throughout understates it, so the rule then
 *       uses the last measured one.
 *   <li><b>Down</b>: without a backlog, ⌈P ÷ (one task's rate × 0.8)⌉ tasks (each at most 80%
 *       busy), or one fewer while no rate has been measured; taken only once every reading of the
 *       scale-down window asked for fewer, and then the most any of them asked for. A reading with
 *       a backlog asks for at least the running tasks and so starts the window again.
 *   <li><b>Bounds</b>: between the minimum and tasks.max; at most one change per reconfigure
 *       interval; after a change, readings count again once one sampling interval has passed
 *       (Connect restarts the tasks meanwhile).
 * </ul>
 */
public final class AutoscalePolicy {

  /** Each task at most this busy after a step down. */
  static final double TARGET_UTILIZATION = 0.8;

  /** Records a task may hold in flight, in max.poll.records: the engine's buffer (2) + a put. */
  static final int HELD_POLLS_PER_TASK = 3;

  /** A step up must raise consumption by at least this share of the tasks it added. */
  static final double GAIN_FLOOR = 0.5;

  /** The weight of the newest window in one task's smoothed rate. */
  static final double RATE_WEIGHT = 0.5;

  private final TaskAutoscale.Settings settings;
  private final int maxTasks;
  private final int minTasks;
  private final Time time;

  private int tasks;

  /** The readings of the current measuring span, oldest first (cleared by a change). */
  private final Deque<Stamped> history = new ArrayDeque<>();

  private long settleUntilMs = Long.MIN_VALUE;
  private long lastChangeAtMs = Long.MIN_VALUE;
  private double perTaskRate = Double.NaN;

  /** The produce rate of the window before, NaN before the first. */
  private double lastProduceRate = Double.NaN;

  /** Scale-down asks of the current run of asks for fewer: {time, tasks}. */
  private final Deque<long[]> lowAsks = new ArrayDeque<>();

  private long lowSinceMs = -1;

  /** The step up whose gain is still to be checked: tasks before it and C before it. */
  private int upFrom;

  private double upFromRate;
  private boolean checkGain;
  private int gainMisses;
  private String upBlocked;

  /** What one pair of readings measured. */
  public record Window(
      long ms, double produceRate, double consumeRate, long lag, double backlog, int tasks) {
    @Override
    public String toString() {
      return String.format(
          Locale.ROOT,
          "%d tasks; over %.1f s produced %.1f/s, consumed %.1f/s; lag %d, backlog %.0f",
          tasks,
          ms / 1000.0,
          produceRate,
          consumeRate,
          lag,
          backlog);
    }
  }

  /** What one reading decided: the task count, whether it changed, and why. */
  public record Decision(int tasks, boolean changed, String reason, Window window) {}

  /**
   * @param maxTasks tasks.max
   * @param initialTasks the tasks running now (the share group's members), clamped to the bounds
   */
  public AutoscalePolicy(
      TaskAutoscale.Settings settings, int maxTasks, int initialTasks, Time time) {
    this.settings = settings;
    this.maxTasks = Math.max(1, maxTasks);
    this.minTasks = Math.min(settings.minTasks(), this.maxTasks);
    this.time = time;
    this.tasks = clamp(initialTasks);
  }

  /** The task count decided so far: what the connector's taskConfigs returns. */
  public synchronized int tasks() {
    return tasks;
  }

  /** One task's measured consume rate (records/s), NaN while none is measured. */
  public synchronized double perTaskRate() {
    return perTaskRate;
  }

  private int clamp(int n) {
    return Math.max(minTasks, Math.min(maxTasks, n));
  }

  /** Takes a reading (null: none could be read) at the clock's time, and decides. */
  public synchronized Decision observe(GroupReading reading) {
    long now = time.milliseconds();
    if (reading == null || reading.partitions().isEmpty()) {
      history.clear();
      return hold("no lag to read (no share-group state yet, or the read failed)", null);
    }
    if (now < settleUntilMs) {
      return hold("tasks restarting after the change to " + tasks, null);
    }
    if (!history.isEmpty() && now <= history.peekLast().atMs()) {
      return hold("a reading at the same time as the last", null);
    }
    history.addLast(new Stamped(now, reading));
    // C is measured over at least two commit intervals: a task acknowledges what it put once
    // per commit cycle, so over one interval a few tasks' acknowledgements come in lumps
    long span = Math.max(settings.intervalMs(), 2 * settings.commitIntervalMs());
    while (history.size() > 2 && now - secondOldest().atMs() >= span) {
      history.removeFirst();
    }
    if (history.size() < 2) {
      return hold("first reading", null);
    }
    Stamped oldest = history.peekFirst();
    if (now - oldest.atMs() < span) {
      return hold(
          "measuring (" + (now - oldest.atMs()) / 1000 + " s of " + span / 1000 + ")", null);
    }
    Stamped previous = secondNewest();
    // P over the last interval, C over the span
    double p = delta(previous.reading(), reading)[0] * 1000.0 / (now - previous.atMs());
    // The rate that goes on: the lower of the last two intervals', so that a burst that arrived
    // in one is counted once, in the backlog, and not again as a rate.
    double sustained = Double.isNaN(lastProduceRate) ? p : Math.min(p, lastProduceRate);
    lastProduceRate = p;
    long ms = now - oldest.atMs();
    long[] d = delta(oldest.reading(), reading);
    double c = Math.max(0, d[0] - d[1]) * 1000.0 / ms;
    long lag = reading.totalLag();
    double held =
        c * settings.commitIntervalMs() / 1000.0
            + (double) tasks * HELD_POLLS_PER_TASK * settings.maxPollRecords();
    double backlog = Math.max(0, lag - held);
    boolean backlogBefore = oldest.reading().totalLag() > held;
    Window w = new Window(ms, p, c, lag, backlog, tasks);

    boolean saturated = backlog > 0 && backlogBefore && c > 0;
    if (saturated) {
      double rate = c / tasks;
      perTaskRate =
          Double.isNaN(perTaskRate) ? rate : RATE_WEIGHT * rate + (1 - RATE_WEIGHT) * perTaskRate;
      if (checkGain) {
        double expected = upFromRate * (1 + GAIN_FLOOR * (tasks - upFrom) / (double) upFrom);
        // two spans in a row: new tasks may take a span to get up to speed (a sink's start-up
        // on a busy machine)
        if (c >= expected) {
          checkGain = false;
        } else if (++gainMisses >= 2) {
          checkGain = false;
          upBlocked =
              String.format(
                  Locale.ROOT,
                  "going from %d to %d tasks raised consumption only from %.1f/s to %.1f/s: the"
                      + " limit is not the tasks (the sink's target, the broker?); no more tasks"
                      + " while this backlog lasts",
                  upFrom,
                  tasks,
                  upFromRate,
                  c);
        }
      }
    }
    if (backlog == 0) {
      upBlocked = null;
      checkGain = false;
    }

    int want;
    String why;
    if (backlog > 0) {
      double draining = c - sustained;
      if (c <= 0) {
        resetLow();
        return hold(
            "a backlog and nothing consumed: the tasks are starting, stopped or failing", w);
      }
      if (draining <= 0 || backlog / draining * 1000 > settings.drainTargetMs()) {
        // one task's rate: this span's when every task was busy throughout, else the last
        // measured one (an idle part of the span would understate it), else this span's
        double perTaskNow =
            saturated || Double.isNaN(perTaskRate) ? c / tasks : Math.max(c / tasks, perTaskRate);
        want =
            (int)
                Math.min(
                    Integer.MAX_VALUE,
                    Math.ceil(
                        (sustained + backlog * 1000.0 / settings.drainTargetMs()) / perTaskNow));
        want = Math.max(want, tasks + 1);
        why =
            draining <= 0
                ? "the backlog grows"
                : String.format(
                    Locale.ROOT, "the backlog would take %.0f s to drain", backlog / draining);
      } else {
        want = tasks;
        why = "a backlog that drains in time";
      }
    } else if (!Double.isNaN(perTaskRate) && perTaskRate > 0) {
      // the produce rate, not C: the window in which a backlog ran out consumed its tail too
      want = (int) Math.ceil(p / (perTaskRate * TARGET_UTILIZATION));
      want = Math.min(want, tasks);
      why =
          String.format(
              Locale.ROOT,
              "no backlog; %.1f/s produced, at %.1f/s per task %.0f%% busy",
              p,
              perTaskRate,
              TARGET_UTILIZATION * 100);
    } else {
      want = tasks - 1;
      why = "no backlog and no per-task rate measured yet: one fewer";
    }
    want = clamp(want);

    if (want > tasks) {
      resetLow();
      if (upBlocked != null) {
        return hold(upBlocked, w);
      }
      if (checkGain && gainMisses > 0) {
        return hold(
            String.format(
                Locale.ROOT,
                "%s; but going from %d to %d tasks has not raised consumption yet (%.1f/s): one"
                    + " more span before adding more",
                why,
                upFrom,
                tasks,
                c),
            w);
      }
      return change(want, now, c, why, w);
    }
    if (want == tasks) {
      resetLow();
      return hold(
          tasks == maxTasks && backlog > 0 && !why.startsWith("a backlog that")
              ? why + "; at tasks.max"
              : why,
          w);
    }
    if (lowSinceMs < 0) {
      lowSinceMs = now;
    }
    lowAsks.addLast(new long[] {now, want});
    while (!lowAsks.isEmpty() && lowAsks.peekFirst()[0] < now - settings.scaleDownWindowMs()) {
      lowAsks.removeFirst();
    }
    if (now - lowSinceMs < settings.scaleDownWindowMs()) {
      return hold(
          why
              + "; asking for "
              + want
              + " since "
              + (now - lowSinceMs) / 1000
              + " s of the "
              + settings.scaleDownWindowMs() / 1000
              + " s window",
          w);
    }
    int target = lowAsks.stream().mapToInt(a -> (int) a[1]).max().orElse(want);
    return change(target, now, c, why, w);
  }

  private record Stamped(long atMs, GroupReading reading) {}

  private Stamped secondOldest() {
    var it = history.iterator();
    it.next();
    return it.next();
  }

  private Stamped secondNewest() {
    var it = history.descendingIterator();
    it.next();
    return it.next();
  }

  /** {records produced, lag change} from {@code before} to {@code after}, partitions in both. */
  private static long[] delta(GroupReading before, GroupReading after) {
    long produced = 0;
    long lagChange = 0;
    for (Map.Entry<TopicPartition, GroupReading.Load> e : after.partitions().entrySet()) {
      GroupReading.Load b = before.partitions().get(e.getKey());
      if (b == null) {
        continue; // a partition new since then: counted from the next reading
      }
      produced += Math.max(0, e.getValue().endOffset() - b.endOffset());
      lagChange += Math.max(0, e.getValue().lag()) - Math.max(0, b.lag());
    }
    return new long[] {produced, lagChange};
  }

  private void resetLow() {
    lowAsks.clear();
    lowSinceMs = -1;
  }

  private Decision change(int to, long now, double c, String why, Window w) {
    if (lastChangeAtMs != Long.MIN_VALUE
        && now - lastChangeAtMs < settings.reconfigureMinIntervalMs()) {
      return hold(
          why
              + "; wants "
              + to
              + " tasks, but the last change was "
              + (now - lastChangeAtMs) / 1000
              + " s ago (at most one per "
              + settings.reconfigureMinIntervalMs() / 1000
              + " s)",
          w);
    }
    int from = tasks;
    tasks = to;
    lastChangeAtMs = now;
    settleUntilMs = now + settings.intervalMs();
    history.clear();
    resetLow();
    if (to > from) {
      checkGain = true;
      gainMisses = 0;
      upFrom = from;
      upFromRate = c;
    } else {
      checkGain = false;
      upBlocked = null;
    }
    return new Decision(to, true, why, w);
  }

  private Decision hold(String why, Window w) {
    return new Decision(tasks, false, why, w);
  }
}
