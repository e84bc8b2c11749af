package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Test;

class MissingTopicsTest {

  private final MockTime time = new MockTime(0, 1_000_000, 0);

  /** A cluster holding {@link #existing}; counts lookups, fails them while {@link #down}. */
  private final Set<String> existing = new HashSet<>();

  private int lookups;
  private boolean down;

  private List<String> lookup(java.util.Collection<String> topics) {
    lookups++;
    if (down) {
      throw new ConnectException("describing topic orders failed: timeout");
    }
    List<String> missing = new ArrayList<>();
    topics.forEach(
        t -> {
          if (!existing.contains(t)) {
            missing.add(t);
          }
        });
    return missing;
  }

  private MissingTopics watch(String... topics) {
    return new MissingTopics("files", List.of(topics), this::lookup, time, 15_000, 600_000);
  }

  @Test
  void warnsAtOnceRechecksOnItsClockAndSaysOnceWhenTheTopicAppears() {
    existing.add("refunds");
    MissingTopics watch = watch("orders", "refunds");

    assertEquals(List.of("orders"), watch.checkIfDue().warned(), "warned at the first lookup");
    assertEquals(List.of("orders"), watch.missing());
    assertTrue(watch.watching());

    time.sleep(14_999);
    assertEquals(MissingTopics.Check.NONE, watch.checkIfDue());
    assertEquals(1, lookups, "no lookup before the interval");

    time.sleep(1);
    assertEquals(MissingTopics.Check.NONE, watch.checkIfDue(), "still missing: no second WARN");
    assertEquals(2, lookups);

    existing.add("orders");
    time.sleep(15_000);
    assertEquals(List.of("orders"), watch.checkIfDue().appeared(), "said once it exists");
    assertFalse(watch.watching());
    time.sleep(60_000);
    assertEquals(MissingTopics.Check.NONE, watch.checkIfDue());
    assertEquals(3, lookups, "no lookup once every topic exists");
  }

  @Test
  void warnsAgainWhileTheTopicStaysMissing() {
    MissingTopics watch = watch("orders");
    assertEquals(List.of("orders"), watch.checkIfDue().warned());
    int warnings = 1;
    for (int i = 0; i < 80; i++) { // 20 minutes of checks
      time.sleep(15_000);
      warnings += watch.checkIfDue().warned().size();
    }
    assertEquals(3, warnings, "at start, after 10 and after 20 minutes");
  }

  @Test
  void aFailedLookupChangesNothingAndTopicsFoundAtOnceAreNotAnnounced() {
    down = true;
    MissingTopics watch = watch("orders");
    assertEquals(MissingTopics.Check.NONE, watch.checkIfDue());
    assertTrue(watch.watching(), "not known to exist yet");

    down = false;
    existing.add("orders");
    time.sleep(15_000);
    assertEquals(MissingTopics.Check.NONE, watch.checkIfDue(), "never missing: nothing to say");
    assertFalse(watch.watching());
  }
}
