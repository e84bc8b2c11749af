package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.ShareConsumerEngine;
import io.sharesink.engine.kafka.LockingShareConsumer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The driver over the Java client's engine ({@code share.engine=java}), on a mock clock, when the
 * driver drops records whose lock has under a second left ({@link AckLedger#forgetExpired}): the
 * engine, which renews what it handed out on every poll, must hand them out again instead of
 * renewing them for ever as records the driver still holds.
 */
class JavaEngineLockLossTest {

  private static final int LOCK_MS = 15_000;

  private final SteppingMockTime time = new SteppingMockTime();
  private ShareSinkDriver driver;
  private ShareConsumerEngine engine;

  @AfterEach
  void stop() {
    if (driver != null) {
      driver.stop();
    }
    if (engine != null) {
      engine.close();
    }
  }

  @Test
  void recordsTheDriverDropsWithUnderASecondLeftAreHandedOutAgainAndAccepted() {
    LockingShareConsumer consumer = new LockingShareConsumer("t", 10, time, LOCK_MS);
    engine = consumer.engine();
    ScriptedSinkTask task = new ScriptedSinkTask();
    boolean[] blocked = {false};
    task.onPut =
        records -> {
          if (!blocked[0] && !records.isEmpty()) {
            blocked[0] = true;
            // The first put outlasts the locks but for half a second, the lock keeper getting no
            // turn meanwhile (a pause of the JVM, a starved thread): the driver drops the ten
            // records when the put returns, and the engine still holds them.
            time.setCurrentTimeMs(time.milliseconds() + LOCK_MS - 500);
          }
        };
    Map<String, String> props = new HashMap<>();
    props.put("share.commit.interval.ms", "100");
    props.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    props.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    driver =
        new ShareSinkDriverBuilder()
            .task(task)
            .taskProps(props)
            .connectorName("test")
            .taskId(0)
            .engine(engine)
            .classLoader(JavaEngineLockLossTest.class.getClassLoader())
            .time(time)
            .keeperTimer(new MockTimeKeeperTimer(time))
            .start();

    long deadline = time.milliseconds() + 6L * LOCK_MS;
    for (int cycles = 0;
        consumer.count(LockingShareConsumer.State.ACKNOWLEDGED) < 10
            && time.milliseconds() < deadline
            && cycles < 100_000;
        cycles++) {
      long before = time.milliseconds();
      driver.runCycle(Duration.ofMillis(50));
      if (time.milliseconds() == before) {
        time.sleep(SteppingMockTime.STEP_MS); // real time passes between cycles
      }
    }
    assertTrue(blocked[0], "the first put blocked");
    assertEquals(
        10,
        consumer.count(LockingShareConsumer.State.ACKNOWLEDGED),
        "records ACCEPTed within six locks; held by the engine: "
            + consumer.count(LockingShareConsumer.State.ACQUIRED)
            + ", acknowledgements "
            + consumer.acknowledged()
            + ", driver "
            + driver.describeForTests());
    assertEquals(20, task.allPut().size(), "put once, dropped, then put again");
    for (long offset = 0; offset < 10; offset++) {
      assertEquals(1, consumer.deliveries(offset), "kept by the engine's renewals: no redelivery");
    }
  }
}
