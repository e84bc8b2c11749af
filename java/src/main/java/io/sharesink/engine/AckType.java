package io.sharesink.engine;

/** Acknowledgement types of KIP-932 (and KIP-1222 for RENEW), with their wire codes. */
public enum AckType {
  ACCEPT((byte) 1),
  RELEASE((byte) 2),
  REJECT((byte) 3),
  RENEW((byte) 4);

  private final byte code;

  AckType(byte code) {
    this.code = code;
  }

  public byte code() {
    return code;
  }
}
