package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.fail;

import io.sharesink.connect.sink.InMemoryShareGroup.Member;
import io.sharesink.connect.sink.InMemoryShareGroup.Rec;
import io.sharesink.connect.sink.InMemoryShareGroup.State;
import io.sharesink.connect.sink.SimulatedSinkTask.Commit;
import io.sharesink.connect.sink.SimulatedSinkTask.Faults;
import io.sharesink.engine.AckType;
import io.sharesink.engine.Acknowledgements;
import io.sharesink.engine.ShareBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The at-least-once promise under seeded random schedules: legacy sinks that commit in every way
 * the contract allows ({@link SimulatedSinkTask.Commit}) and misbehave on a schedule (retriable and
 * fatal put failures, failures deferred to the next put, puts that block for several lock
 * durations, flush failures, pauses, commit requests), driven by one or two drivers over the
 * in-memory share group, with peer members that take records and release them or let their locks
 * run out (so records come back below what a driver already committed), new records arriving, and
 * drivers that crash (kill -9: the sink's buffer is gone, the locks run out) or stop and come back.
 *
 * <p>Checked after every step:
 *
 * <ol>
 *   <li>every record the group has ACCEPTed is in the sink's durable store;
 *   <li>no lock of a live driver's member ran out (each would burn a delivery attempt the classic
 *       runtime never spends: enough of them archive the record);
 *   <li>no acknowledgement was refused (a driver acknowledged only what it held).
 * </ol>
 *
 * And at the end, after the faults stop: every record is ACCEPTed (nothing lost, nothing stuck).
 *
 * <p>{@code -Dsharesink.sim.seeds=N} runs N seeds (default 10,000) from {@code
 * -Dsharesink.sim.first} (default 1); {@code -Dsharesink.sim.seed=S} replays seed S alone. A
 * failure names its seed.
 */
class AtLeastOnceSimulationTest {

  private static final int SEEDS = Integer.getInteger("sharesink.sim.seeds", 10_000);
  private static final long FIRST = Long.getLong("sharesink.sim.first", 1L);
  private static final Long ONE = Long.getLong("sharesink.sim.seed");

  /** What all runs did, to show the schedules reach the cases they are meant to. */
  static final class Totals {
    long runs;
    long steps;
    long crashes;
    long stops;
    long peerReleases;
    long peerExpiries;
    long redeliveredBelowCommit;
    long blockingPuts;
    long restarts;
    long accepted;
    final Map<Commit, Long> byCommit = new TreeMap<>();

    @Override
    public String toString() {
      return runs
          + " runs, "
          + steps
          + " steps, "
          + accepted
          + " records accepted; "
          + crashes
          + " crashes, "
          + stops
          + " stops, "
          + restarts
          + " legacy task restarts, "
          + peerReleases
          + " peer releases, "
          + peerExpiries
          + " peer lock expiries, "
          + redeliveredBelowCommit
          + " deliveries to a driver below an ACCEPTed offset of their partition, "
          + blockingPuts
          + " puts blocked past a lock; runs by commit mode "
          + byCommit;
    }
  }

  @Test
  void everyAcceptedRecordIsDurableAtEveryStepOfEverySchedule() {
    Totals totals = new Totals();
    long start = System.nanoTime();
    if (ONE != null) {
      new Run(ONE, totals).run();
    } else {
      for (long seed = FIRST; seed < FIRST + SEEDS; seed++) {
        new Run(seed, totals).run();
      }
    }
    System.out.printf(
        "at-least-once simulation: %s; %.1f s%n", totals, (System.nanoTime() - start) / 1e9);
  }

  /** A live or crashed incarnation of one Connect task: its member, sink and driver. */
  private static final class Node {
    final Member member;
    final ShareSinkDriver driver;

    /** The running legacy task instance (a restart in place replaces it). */
    final SimulatedSinkTask[] sink;

    boolean alive = true;

    Node(Member member, ShareSinkDriver driver, SimulatedSinkTask[] sink) {
      this.member = member;
      this.driver = driver;
      this.sink = sink;
    }

    @Override
    public String toString() {
      return member.name;
    }
  }

  /** Another member of the group that takes records and gives them back, or lets them lapse. */
  private static final class Peer {
    final Member member;
    final List<Rec> held = new ArrayList<>();

    Peer(Member member) {
      this.member = member;
    }
  }

  /** One seeded schedule. */
  private static final class Run {
    final long seed;
    final Totals totals;
    final Random random;
    final SteppingMockTime time = new SteppingMockTime();
    final Set<String> durable = new HashSet<>();
    final SimulatedSinkTask.World world;
    final InMemoryShareGroup group;
    final long lockMs;
    final int partitions;
    final Commit commit;
    final Faults faults;
    final int rollRecords;
    final Map<String, String> props = new HashMap<>();
    final long maxPollMs;
    final List<Node> nodes = new ArrayList<>();
    final List<Peer> peers = new ArrayList<>();
    final StringBuilder trace = new StringBuilder();

    /** Highest offset each partition has had ACCEPTed so far (for the statistics). */
    final Map<String, Long> acceptedMax = new HashMap<>();

    /** Deliveries to a driver of records below their partition's highest ACCEPTed offset. */
    final Set<String> belowCommit = new HashSet<>();

    int members;
    int step;

    Run(long seed, Totals totals) {
      this.seed = seed;
      this.totals = totals;
      this.random = new Random(seed);
      this.world = new SimulatedSinkTask.World(durable, random, time);
      this.lockMs = 2_000 + random.nextInt(29) * 1_000L;
      world.lockMs = lockMs;
      this.partitions = 1 + random.nextInt(3);
      this.group = new InMemoryShareGroup(time, lockMs, 1 + random.nextInt(40));
      group.deliveryCountLimit = Integer.MAX_VALUE; // attempts burnt are checked directly
      if (random.nextInt(3) == 0) {
        group.acquiredRangeSize = 1 + random.nextInt(10);
      }
      this.commit = Commit.values()[random.nextInt(Commit.values().length)];
      this.rollRecords = 1 + random.nextInt(30);
      this.faults =
          random.nextInt(5) == 0
              ? Faults.NONE
              : new Faults(
                  pick(0, 0.05, 0.2),
                  pick(0, 0.02, 0.1),
                  pick(0, 0.02, 0.1),
                  pick(0, 0.02, 0.1),
                  lockMs * (1 + random.nextInt(4)),
                  pick(0, 0.02, 0.1),
                  pick(0, 0.05),
                  pick(0, 0.05));
      this.maxPollMs = 50 + random.nextInt(1_000);
      props.put("share.commit.interval.ms", String.valueOf(pickLong(100, 500, 2_000, lockMs / 2)));
      props.put("share.commit.max.records", String.valueOf(pickLong(0, 3, 20, 1_000)));
      props.put("share.commit.min.interval.ms", String.valueOf(pickLong(0, 10, 500)));
      props.put("share.task.restart.max.attempts", String.valueOf(pickLong(0, 3, 100)));
      props.put("share.task.restart.backoff.ms", String.valueOf(pickLong(0, 100, 1_000)));
      props.put("share.task.restart.backoff.max.ms", "4000");
      if (commit == Commit.WRITES_IN_PUT && random.nextBoolean()) {
        props.put("share.commit.empty.precommit", "accept"); // right for a sink that writes in put
      }
      totals.runs++;
      totals.byCommit.merge(commit, 1L, Long::sum);
    }

    private double pick(double... choices) {
      return choices[random.nextInt(choices.length)];
    }

    private long pickLong(long... choices) {
      return choices[random.nextInt(choices.length)];
    }

    void run() {
      try {
        produce(10 + random.nextInt(150));
        int drivers = 1 + random.nextInt(2);
        for (int i = 0; i < drivers; i++) {
          nodes.add(startNode());
        }
        int peerCount = random.nextInt(3);
        for (int i = 0; i < peerCount; i++) {
          peers.add(new Peer(group.member("peer-" + i)));
        }
        int steps = 80 + random.nextInt(200);
        for (step = 0; step < steps; step++) {
          act();
          check();
        }
        drain();
      } catch (AssertionError | RuntimeException e) {
        throw new AssertionError(
            "seed "
                + seed
                + " (replay it alone with -Dsharesink.sim.seed="
                + seed
                + "), step "
                + step
                + ", commit "
                + commit
                + ", "
                + faults
                + ", props "
                + props
                + ": "
                + e
                + "\nlast steps:\n"
                + lastLines(trace, 40),
            e);
      }
      totals.steps += step;
      totals.accepted += group.count(State.ACCEPTED);
      totals.redeliveredBelowCommit += belowCommit.size();
      totals.blockingPuts += world.blockedPuts;
    }

    private void produce(int count) {
      for (int i = 0; i < count; i++) {
        group.produce("t", random.nextInt(partitions), null, "v" + i);
      }
    }

    private Node startNode() {
      Member member = group.member("driver-" + members++);
      SimulatedSinkTask sink = new SimulatedSinkTask(world, commit, faults, rollRecords);
      Map<String, String> config = new HashMap<>(props);
      config.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
      config.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
      SimulatedSinkTask[] current = {sink};
      ShareSinkDriver driver =
          new ShareSinkDriverBuilder()
              .task(sink)
              .taskProps(config)
              .connectorName("sim")
              .taskId(members)
              .engine(member)
              .classLoader(AtLeastOnceSimulationTest.class.getClassLoader())
              .time(time)
              .keeperTimer(new MockTimeKeeperTimer(time))
              .newInstances(
                  () -> {
                    totals.restarts++;
                    current[0] = new SimulatedSinkTask(world, commit, faults, rollRecords);
                    return current[0];
                  })
              .start();
      return new Node(member, driver, current);
    }

    private void act() {
      int roll = random.nextInt(100);
      List<Node> alive = nodes.stream().filter(n -> n.alive).toList();
      if (roll < 55 && !alive.isEmpty()) {
        Node node = alive.get(random.nextInt(alive.size()));
        cycle(node);
      } else if (roll < 65) {
        long ms = random.nextInt((int) (lockMs / 2));
        trace("sleep " + ms);
        time.sleep(ms);
      } else if (roll < 80 && !peers.isEmpty()) {
        peerAct(peers.get(random.nextInt(peers.size())));
      } else if (roll < 84) {
        int count = 1 + random.nextInt(20);
        trace("produce " + count);
        produce(count);
      } else if (roll < 86 && !alive.isEmpty()) {
        Node node = alive.get(random.nextInt(alive.size()));
        trace("crash " + node);
        totals.crashes++;
        node.alive = false;
        node.member.crash();
        node.sink[0].lose();
      } else if (roll < 87 && !alive.isEmpty()) {
        Node node = alive.get(random.nextInt(alive.size()));
        trace("stop " + node);
        totals.stops++;
        node.alive = false;
        node.driver.stop();
        node.member.close();
      } else if (roll < 92 && alive.size() < 2) {
        Node node = startNode();
        trace("start " + node);
        nodes.add(node);
      }
    }

    private void cycle(Node node) {
      trace("cycle " + node + " at " + time.milliseconds());
      try {
        node.driver.runCycle(Duration.ofMillis(maxPollMs));
      } catch (RuntimeException e) {
        // The Connect task fails: the runtime stops it and closes its member.
        trace("  failed: " + e.getMessage());
        node.alive = false;
        node.driver.stop();
        node.member.close();
      }
    }

    private void peerAct(Peer peer) {
      int roll = random.nextInt(10);
      if (roll < 4) {
        ShareBatch batch = peer.member.poll(Duration.ZERO);
        for (int i = 0; i < batch.size(); i++) {
          peer.held.add(group.rec(batch.topic(i), batch.partition(i), batch.offset(i)));
        }
        trace("peer " + peer.member.name + " takes " + batch.size());
      } else if (roll < 7 && !peer.held.isEmpty()) {
        // gives some back: RELEASE (a stopping member), or ACCEPT after writing them itself
        Acknowledgements acks = new Acknowledgements();
        boolean accept = random.nextInt(4) == 0;
        for (Rec rec : takeSome(peer)) {
          if (rec.state == State.ACQUIRED
              && rec.owner == peer.member
              && rec.lockDeadlineMs > time.milliseconds()) {
            if (accept) {
              durable.add(SimulatedSinkTask.key(rec.topic, rec.partition, rec.offset));
            }
            acks.add(
                rec.topic, rec.partition, rec.offset, accept ? AckType.ACCEPT : AckType.RELEASE);
            totals.peerReleases += accept ? 0 : 1;
          }
        }
        trace("peer " + peer.member.name + (accept ? " accepts " : " releases ") + acks.size());
        peer.member.acknowledge(acks);
      } else if (!peer.held.isEmpty()) {
        List<Rec> lapsed = takeSome(peer); // never acknowledged: their locks run out
        totals.peerExpiries += lapsed.size();
        trace("peer " + peer.member.name + " forgets " + lapsed.size());
      }
    }

    private List<Rec> takeSome(Peer peer) {
      List<Rec> some = new ArrayList<>();
      int n = 1 + random.nextInt(peer.held.size());
      for (int i = 0; i < n; i++) {
        some.add(peer.held.remove(random.nextInt(peer.held.size())));
      }
      return some;
    }

    private void check() {
      for (Rec rec : group.all()) {
        if (rec.state == State.ACCEPTED
            && !durable.contains(SimulatedSinkTask.key(rec.topic, rec.partition, rec.offset))) {
          fail(rec + " is ACCEPTed but not in the sink's durable store");
        }
        if (rec.state == State.REJECTED || rec.state == State.ARCHIVED) {
          fail(rec + " was " + rec.state + " with no poison record in the run");
        }
      }
      for (Node node : nodes) {
        if (node.member.locksLost > 0) {
          fail(node + " let " + node.member.locksLost + " locks run out while alive");
        }
      }
      if (!group.violations.isEmpty()) {
        fail("refused acknowledgements: " + group.violations);
      }
      trackCommits();
    }

    /** Counts deliveries to a driver of records below their partition's highest ACCEPTed offset. */
    private void trackCommits() {
      for (Rec rec : group.all()) {
        String tp = rec.topic + "-" + rec.partition;
        if (rec.state == State.ACCEPTED) {
          acceptedMax.merge(tp, rec.offset, Math::max);
        } else if (rec.state == State.ACQUIRED
            && rec.offset < acceptedMax.getOrDefault(tp, -1L)
            && rec.owner.name.startsWith("driver")) {
          belowCommit.add(rec.toString());
        }
      }
    }

    /** The faults end; every record must end up ACCEPTed (and so, by check 1, durable). */
    private void drain() {
      trace("drain");
      world.healthy = true;
      for (Peer peer : peers) {
        peer.member.close();
      }
      while (nodes.stream().filter(n -> n.alive).count() < 1) {
        nodes.add(startNode());
      }
      long deadline = time.milliseconds() + 30 * 60_000L;
      for (int cycles = 0; group.count(State.ACCEPTED) < group.all().size(); cycles++) {
        if (time.milliseconds() > deadline || cycles > 20_000) {
          fail(
              "not drained after "
                  + cycles
                  + " cycles and "
                  + (time.milliseconds() - deadline + 30 * 60_000L)
                  + " ms: "
                  + notAccepted()
                  + "; nodes "
                  + describeNodes());
        }
        for (Node node : nodes) {
          if (node.alive) {
            cycle(node);
          }
        }
        if (nodes.stream().noneMatch(n -> n.alive)) {
          nodes.add(startNode());
        }
        check();
      }
      for (Node node : nodes) {
        if (node.alive) {
          node.driver.stop();
          node.member.close();
        }
      }
      check();
    }

    private String describeNodes() {
      StringBuilder out = new StringBuilder();
      for (Node node : nodes) {
        out.append(node)
            .append(node.alive ? " alive" : " dead")
            .append(" holding ")
            .append(node.driver.inFlight())
            .append(" (")
            .append(node.driver.describeForTests())
            .append("); ");
      }
      return out.toString();
    }

    private List<Rec> notAccepted() {
      return group.all().stream().filter(r -> r.state != State.ACCEPTED).limit(20).toList();
    }

    private void trace(String line) {
      trace.append(step).append(": ").append(line).append('\n');
      if (trace.length() > 64_000) {
        trace.delete(0, trace.length() - 32_000);
      }
    }

    private static String lastLines(StringBuilder text, int n) {
      String[] lines = text.toString().split("\n");
      StringBuilder out = new StringBuilder();
      for (int i = Math.max(0, lines.length - n); i < lines.length; i++) {
        out.append(lines[i]).append('\n');
      }
      return out.toString();
    }
  }
}
