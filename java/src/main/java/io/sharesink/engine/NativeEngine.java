package io.sharesink.engine;

/**
 * Every {@code native} method of sharesink, bound to {@code libsharesink_jni} (crate {@code
 * rust/jni}). The exported symbols are named after this class and package, so it must never be
 * renamed, shaded or relocated without changing the Rust side too.
 *
 * <p>The library must be loaded first, through {@code
 * io.sharesink.connect.nativelib.NativeLoader#ensureLoaded()}; calling a method before that throws
 * {@link UnsatisfiedLinkError}. Errors from native code arrive as {@link NativeException}.
 */
public final class NativeEngine {

  private NativeEngine() {}

  /** The native library's version ({@code CARGO_PKG_VERSION}); must equal the jar's version. */
  public static native String nativeVersion();

  /**
   * Connects to the cluster, asks for its API versions and metadata, and describes what it found
   * (one line, human readable). Blocks for at most about {@code timeoutMs}.
   *
   * @throws NativeException when the cluster cannot be reached or answers with an error
   */
  public static native String probe(String bootstrapServers, long timeoutMs);

  /**
   * Panics inside native code with {@code message}; used by tests to prove that a Rust panic
   * surfaces as a {@link NativeException} of kind {@link EngineException.Kind#PANIC} instead of
   * aborting the JVM.
   */
  static native void panicForTest(String message);
}
