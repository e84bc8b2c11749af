package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.engine.EngineException;
import io.sharesink.engine.EngineException.Kind;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.junit.jupiter.api.Test;

class NativeErrorsTest {

  @Test
  void mapsKindsToConnectExceptions() {
    EngineException timeout = new EngineException(Kind.TIMEOUT, "slow");
    RuntimeException retriable = NativeErrors.toConnect("probing", timeout);
    assertInstanceOf(RetriableException.class, retriable);
    assertSame(timeout, retriable.getCause());
    assertTrue(retriable.getMessage().startsWith("probing: "), retriable.getMessage());

    assertInstanceOf(
        ConfigException.class,
        NativeErrors.toConnect("x", new EngineException(Kind.CONFIG, "bad address")));

    RuntimeException panic = NativeErrors.toConnect("x", new EngineException(Kind.PANIC, "boom"));
    assertInstanceOf(ConnectException.class, panic);
    assertTrue(!(panic instanceof RetriableException));
  }
}
