package io.sharesink.connect.sink;

import org.apache.kafka.connect.errors.ConnectException;

/**
 * What the errant record reporter throws under {@code errors.tolerance=none}, as the runtime does:
 * the task declared a record bad, so a put failing with it fails the task rather than restarting it
 * (see {@link LegacyTaskRestarts}).
 */
public final class ToleranceExceededException extends ConnectException {

  private static final long serialVersionUID = 1L;

  public ToleranceExceededException(String message, Throwable cause) {
    super(message, cause);
  }
}
