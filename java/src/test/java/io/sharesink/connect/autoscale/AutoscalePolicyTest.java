package io.sharesink.connect.autoscale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.MockTime;
import org.junit.jupiter.api.Test;

/**
 * The autoscaler's rule on a mock clock, fed by a simulated share group: records arrive at a
 * produce rate, and each running task consumes up to its capacity per second while records are
 * available. One record per poll, as the slow sink of the benchmark, commits every second.
 */
class AutoscalePolicyTest {

  static final TopicPartition TP = new TopicPartition("t", 0);
  static final long INTERVAL = 5_000;

  static TaskAutoscale.Settings settings(int min, long bound, long window) {
    return new TaskAutoscale.Settings(min, INTERVAL, bound, window, 60_000, 1, 1_000);
  }

  /** A share group whose tasks each consume {@code capacity} records/s while records wait. */
  static final class Group {
    final MockTime time = new MockTime(0, 1_000_000, 0);
    final AutoscalePolicy policy;
    double capacity;
    double produceRate;
    long end;
    double acked;

    /** Acknowledged once per this many seconds (a commit cycle), 1: every second. */
    int ackEvery = 1;

    double pending;
    long second;
    final List<AutoscalePolicy.Decision> decisions = new ArrayList<>();
    final List<Long> changedAt = new ArrayList<>();

    Group(TaskAutoscale.Settings settings, int max, int initial, double capacity) {
      this.policy = new AutoscalePolicy(settings, max, initial, time);
      this.capacity = capacity;
    }

    GroupReading reading() {
      return new GroupReading(Map.of(TP, new GroupReading.Load(end, end - (long) acked)));
    }

    /** {@code seconds} of produce and consume, one reading per interval; the last decision. */
    AutoscalePolicy.Decision run(double seconds) {
      AutoscalePolicy.Decision last = null;
      for (long ms = 0; ms < seconds * 1000; ms += INTERVAL) {
        for (int s = 0; s < INTERVAL / 1000; s++) {
          time.sleep(1000);
          end += Math.round(produceRate);
          pending = Math.min(end - acked, pending + policy.tasks() * capacity);
          if (++second % ackEvery == 0) {
            acked += pending;
            pending = 0;
          }
        }
        last = policy.observe(reading());
        decisions.add(last);
        if (last.changed()) {
          changedAt.add(time.milliseconds());
        }
      }
      return last;
    }

    void burst(long records) {
      end += records;
    }

    List<Integer> changes() {
      return decisions.stream()
          .filter(AutoscalePolicy.Decision::changed)
          .map(AutoscalePolicy.Decision::tasks)
          .toList();
    }
  }

  @Test
  void aBurstGoesToTasksMaxInOneStepAndTheTrickleBackToTheMinimum() {
    Group g = new Group(settings(2, 30_000, 60_000), 12, 2, 45);
    g.produceRate = 20;
    g.run(30);
    assertEquals(List.of(), g.changes(), "20/s fits two tasks of 45/s: nothing changes");
    assertEquals(2, g.policy.tasks());

    g.burst(30_000);
    g.run(10);
    assertEquals(List.of(12), g.changes(), "a burst: straight to tasks.max");
    g.run(120);
    assertEquals(List.of(12, 2), g.changes(), "drained, then back down to the minimum");
    assertEquals(45, g.policy.perTaskRate(), 0.5, "one task's rate, measured under the backlog");
  }

  @Test
  void acknowledgementsInLumpsOfACommitCycleStillScaleAtTheFirstReadingAfterABurst() {
    // Commits every 5 s, readings every 5 s: over one interval two tasks acknowledge 0 or 2 cycles'
    // worth; the consume rate is measured over two commit intervals.
    TaskAutoscale.Settings s =
        new TaskAutoscale.Settings(2, INTERVAL, 30_000, 60_000, 60_000, 1, 5_000);
    Group g = new Group(s, 12, 2, 45);
    g.ackEvery = 5;
    g.time.sleep(2_500); // readings half-way between two commits
    g.produceRate = 20;
    g.run(60);
    assertEquals(List.of(), g.changes(), g.decisions.toString());
    g.burst(30_000);
    g.run(5);
    assertEquals(List.of(12), g.changes(), g.decisions.toString());
    g.run(240);
    assertEquals(List.of(12, 2), g.changes());
  }

  @Test
  void aGrowingLagAddsAsManyTasksAsTheProduceRateAndTheBacklogNeed() {
    Group g = new Group(settings(1, 30_000, 60_000), 50, 1, 10);
    g.produceRate = 35; // three and a half tasks' worth
    g.run(15);
    // the backlog grows by 25/s; at the first window with a backlog at 10/s per task the rule asks
    // for (P + backlog / 60 s) / 10 tasks, far below tasks.max
    assertEquals(1, g.changes().size(), g.decisions.toString());
    int up = g.changes().get(0);
    assertTrue(up >= 4 && up <= 8, "up to " + up);
  }

  @Test
  void neverBeyondTasksMaxNorBelowTheMinimum() {
    Group g = new Group(settings(3, 0, 0), 5, 1, 10);
    assertEquals(3, g.policy.tasks(), "starts within the bounds");
    g.burst(1_000_000);
    g.run(60);
    assertEquals(5, g.policy.tasks());
    assertTrue(g.changes().stream().allMatch(n -> n <= 5), g.changes().toString());
    g.end = (long) g.acked; // nothing left
    g.acked = g.end;
    g.capacity = 1_000_000;
    g.run(60);
    assertEquals(3, g.policy.tasks(), "idle: down to the minimum, not below");

    Group above = new Group(settings(8, 0, 0), 4, 1, 10);
    assertEquals(4, above.policy.tasks(), "a minimum above tasks.max is tasks.max");
  }

  @Test
  void scaleDownWaitsForAWholeWindowOfAsksForFewerAndABacklogStartsItAgain() {
    Group g = new Group(settings(1, 0, 60_000), 12, 1, 10);
    g.produceRate = 60;
    g.run(40);
    int busy = g.policy.tasks();
    assertTrue(busy >= 6, "scaled up to " + busy);
    g.acked = g.end; // what accumulated is gone

    g.produceRate = 10; // one task's worth at 100%: two at 80%
    g.decisions.clear();
    g.run(55);
    assertEquals(List.of(), g.changes(), "under a minute of asking for fewer: no change");
    g.burst(500); // a backlog that drains in time: asks for the running tasks
    g.run(5);
    assertEquals(List.of(), g.changes());
    g.run(60);
    assertEquals(List.of(), g.changes(), "the window started again at the backlog");
    g.run(15);
    assertEquals(List.of(2), g.changes(), "after a full window: the most asked for in it");
  }

  @Test
  void noMoreThanOneChangePerReconfigureInterval() {
    Group g = new Group(settings(1, 120_000, 0), 12, 1, 10);
    g.burst(100_000);
    g.produceRate = 0;
    g.run(10);
    assertEquals(List.of(12), g.changes());
    long upAt = g.time.milliseconds();
    // drained well within the bound; the scale-down window is 0, so only the bound holds it
    g.capacity = 100_000;
    g.run(60);
    assertEquals(List.of(12), g.changes(), "no change within 120 s of the last");
    assertTrue(
        g.decisions.get(g.decisions.size() - 1).reason().contains("at most one per 120 s"),
        g.decisions.get(g.decisions.size() - 1).reason());
    g.run(70);
    assertEquals(List.of(12, 1), g.changes());
    assertEquals(upAt, g.changedAt.get(0));
    long gap = g.changedAt.get(1) - g.changedAt.get(0);
    assertTrue(gap >= 120_000 && gap <= 120_000 + INTERVAL, "down " + gap + " ms after up");
  }

  @Test
  void aConnectorCannotSetTheBoundBelowTheFloor() {
    // Before: share.tasks.autoscale.reconfigure.min.interval.ms=1000 let one connector rebalance
    // the Connect cluster every second or so.
    Map<String, String> props =
        Map.of(
            TaskAutoscale.ENABLE_CONFIG, "true",
            TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG, "1000",
            TaskAutoscale.SCALE_DOWN_WINDOW_MS_CONFIG, "0",
            TaskAutoscale.INTERVAL_MS_CONFIG, "1000");
    assertEquals(
        List.of(TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG),
        List.copyOf(TaskAutoscale.problems(props).keySet()));
    TaskAutoscale.Settings fromProps = TaskAutoscale.Settings.of(props);
    assertEquals(
        TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_FLOOR, fromProps.reconfigureMinIntervalMs());
    // A load that would flip between one task and twelve every few seconds changes at most once
    // per floor.
    Group g = new Group(fromProps, 12, 1, 10);
    for (int round = 0; round < 6; round++) {
      g.burst(100_000);
      g.capacity = 10;
      g.run(10);
      g.capacity = 1_000_000;
      g.run(10);
    }
    assertTrue(g.changedAt.size() >= 2, g.decisions.toString());
    for (int i = 1; i < g.changedAt.size(); i++) {
      long gap = g.changedAt.get(i) - g.changedAt.get(i - 1);
      assertTrue(
          gap >= TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_FLOOR, "changes " + gap + " ms apart");
    }
    // At the floor and above: no problem.
    assertEquals(
        Map.of(),
        TaskAutoscale.problems(
            Map.of(
                TaskAutoscale.ENABLE_CONFIG, "true",
                TaskAutoscale.RECONFIGURE_MIN_INTERVAL_MS_CONFIG, "60000")));
  }

  @Test
  void aBacklogThatNothingConsumesAddsNoTasks() {
    Group g = new Group(settings(1, 0, 60_000), 12, 2, 0); // tasks starting, stopped or failing
    g.burst(10_000);
    g.produceRate = 50;
    g.run(60);
    assertEquals(List.of(), g.changes());
    assertTrue(g.decisions.get(g.decisions.size() - 1).reason().contains("nothing consumed"));
  }

  @Test
  void aStepUpThatDidNotPayBlocksFurtherStepsUntilTheBacklogIsGone() {
    // The sink's target limits the whole group to 40/s, however many tasks run.
    TaskAutoscale.Settings s = settings(1, 0, 60_000);
    MockTime time = new MockTime(0, 1_000_000, 0);
    AutoscalePolicy policy = new AutoscalePolicy(s, 40, 2, time);
    long end = 0;
    long acked = 0;
    List<Integer> changes = new ArrayList<>();
    String lastReason = "";
    for (int i = 0; i < 40; i++) {
      time.sleep(INTERVAL);
      end += 100 * INTERVAL / 1000;
      acked += 40 * INTERVAL / 1000;
      AutoscalePolicy.Decision d =
          policy.observe(new GroupReading(Map.of(TP, new GroupReading.Load(end, end - acked))));
      if (d.changed()) {
        changes.add(d.tasks());
      }
      lastReason = d.reason();
    }
    assertEquals(1, changes.size(), "one step up, then none: " + changes);
    assertTrue(lastReason.contains("the limit is not the tasks"), lastReason);
  }

  @Test
  void noReadingNoChange() {
    MockTime time = new MockTime(0, 1_000_000, 0);
    AutoscalePolicy policy = new AutoscalePolicy(settings(1, 0, 0), 12, 6, time);
    for (int i = 0; i < 20; i++) {
      time.sleep(INTERVAL);
      assertFalse(policy.observe(null).changed());
      assertFalse(policy.observe(new GroupReading(Map.of())).changed());
    }
    assertEquals(6, policy.tasks());
  }

  @Test
  void aPartitionNewSinceTheLastReadingCountsFromTheNextOne() {
    MockTime time = new MockTime(0, 1_000_000, 0);
    AutoscalePolicy policy = new AutoscalePolicy(settings(1, 0, 60_000), 12, 2, time);
    TopicPartition other = new TopicPartition("t", 1);
    policy.observe(new GroupReading(Map.of(TP, new GroupReading.Load(100, 0))));
    time.sleep(INTERVAL);
    // a partition that appeared with a million records of history: no rate from it yet
    AutoscalePolicy.Decision d =
        policy.observe(
            new GroupReading(
                Map.of(
                    TP,
                    new GroupReading.Load(150, 0),
                    other,
                    new GroupReading.Load(1_000_000, 0))));
    assertEquals(10.0, d.window().produceRate(), 1e-9);
  }
}
