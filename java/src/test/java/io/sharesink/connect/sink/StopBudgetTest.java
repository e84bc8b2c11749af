package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.ShareSinkConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The stop budget adds up: what a stop waits for fits in Connect's shutdown grace. */
class StopBudgetTest {

  @Test
  void theDriversFinalWaitAndTheEnginesCloseFitInTheShutdownGrace() {
    Duration stop = StopBudget.FINAL_WAIT.plus(StopBudget.ENGINE_CLOSE);
    assertTrue(stop.compareTo(StopBudget.SHUTDOWN_GRACE) < 0, stop + " within the grace");
  }

  @Test
  void aPollFitsInTheShutdownGrace() {
    assertTrue(
        ShareSinkConfig.POLL_TIMEOUT_MS_MAX <= StopBudget.SHUTDOWN_GRACE.toMillis(),
        "the worker gives a stopping task the grace to return from poll()");
  }
}
