package io.sharesink.connect.nativelib;

import org.apache.kafka.connect.errors.ConnectException;

/** The sharesink native library could not be loaded, or is not the one this jar was built with. */
public final class NativeLoadException extends ConnectException {

  public NativeLoadException(String message) {
    super(message);
  }

  public NativeLoadException(String message, Throwable cause) {
    super(message, cause);
  }
}
