package io.sharesink.engine;

/**
 * An error from a share consumer engine: a stable kind plus a message. The Connect adapter maps the
 * kind to RetriableException, ConnectException or ConfigException.
 */
public class EngineException extends RuntimeException {

  /**
   * Stable error kinds shared with the native engine, which names them (Rust {@code
   * ErrorKind::name} and the JNI layer's {@code PANIC}); a JVM test checks that every native name
   * is one of these.
   */
  public enum Kind {
    CONFIG,
    CONNECTION,
    AUTHENTICATION,
    AUTHORIZATION,
    UNSUPPORTED,
    PROTOCOL,
    TIMEOUT,
    CLOSED,
    INTERNAL,
    /**
     * Records that do not fit in the member's memory bound (a compression bomb, a flood of
     * headers): the member stopped and released them.
     */
    RESOURCE,
    /** A panic in the native code, caught at the JNI boundary. */
    PANIC;

    /** Transient conditions: retrying the same operation later may succeed. */
    public boolean retriable() {
      return this == CONNECTION || this == TIMEOUT;
    }
  }

  private final Kind kind;

  public EngineException(Kind kind, String message) {
    super(kind + ": " + message);
    this.kind = kind;
  }

  public EngineException(Kind kind, String message, Throwable cause) {
    super(kind + ": " + message, cause);
    this.kind = kind;
  }

  public Kind kind() {
    return kind;
  }

  /** Whether retrying the same operation later may succeed; by default decided by the kind. */
  public boolean retriable() {
    return kind.retriable();
  }
}
