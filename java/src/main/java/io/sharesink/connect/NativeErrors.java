package io.sharesink.connect;

import io.sharesink.engine.EngineException;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;

/** Maps engine errors (stable kinds) to the exceptions the Connect runtime understands. */
final class NativeErrors {

  private NativeErrors() {}

  /**
   * A transient failure becomes a {@link RetriableException}, a configuration problem a {@link
   * ConfigException}, anything else (including a native panic) a {@link ConnectException}.
   */
  static RuntimeException toConnect(String doing, EngineException e) {
    String message = doing + ": " + e.getMessage();
    if (e.retriable()) {
      return new RetriableException(message, e);
    }
    if (e.kind() == EngineException.Kind.CONFIG) {
      ConfigException config = new ConfigException(message);
      config.initCause(e);
      return config;
    }
    return new ConnectException(message, e);
  }
}
