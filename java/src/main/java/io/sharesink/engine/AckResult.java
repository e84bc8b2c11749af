package io.sharesink.engine;

/**
 * The broker's answer for one acknowledged range. {@code errorCode} is Kafka's error code (0 = ok;
 * 121 = INVALID_RECORD_STATE: the records were no longer acquired by this member).
 */
public record AckResult(Acknowledgements.Range range, short errorCode, String errorMessage) {
  public boolean ok() {
    return errorCode == 0;
  }
}
