package io.sharesink.engine;

/**
 * An error thrown by native code: a stable kind (the name of a Rust {@code ErrorKind}, or {@code
 * PANIC}), a message, and whether the engine judged the failure transient. Constructed only by the
 * JNI layer; its constructor signature is part of the JNI contract.
 */
public final class NativeException extends EngineException {

  private final boolean retriable;

  /** Called from native code. An unknown kind name becomes {@link Kind#INTERNAL}. */
  NativeException(String kindName, String message, boolean retriable) {
    super(parseKind(kindName), messageFor(kindName, message));
    this.retriable = retriable;
  }

  @Override
  public boolean retriable() {
    return retriable;
  }

  private static Kind parseKind(String kindName) {
    try {
      return Kind.valueOf(kindName);
    } catch (IllegalArgumentException | NullPointerException e) {
      return Kind.INTERNAL;
    }
  }

  // Keep an unknown kind name visible instead of silently folding it into INTERNAL.
  private static String messageFor(String kindName, String message) {
    return parseKind(kindName).name().equals(kindName)
        ? message
        : "(native kind " + kindName + ") " + message;
  }
}
