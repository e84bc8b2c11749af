package io.sharesink.connect.sink;

import java.util.function.Supplier;

/**
 * Runs a call into plugin code with the thread context class loader set to that plugin's loader, as
 * the Connect runtime does (KIP-891): JDBC DriverManager, ServiceLoader, Jackson modules and static
 * initialisers look at the TCCL.
 */
public final class LoaderSwap {

  private LoaderSwap() {}

  /** The loader of the plugin object's class (the bootstrap loader maps to the system loader). */
  public static ClassLoader loaderOf(Object plugin) {
    ClassLoader loader = plugin.getClass().getClassLoader();
    return loader != null ? loader : ClassLoader.getSystemClassLoader();
  }

  /** Every Connect plugin method throws only unchecked exceptions. */
  public static <T> T call(ClassLoader loader, Supplier<T> call) {
    Thread thread = Thread.currentThread();
    ClassLoader saved = thread.getContextClassLoader();
    thread.setContextClassLoader(loader);
    try {
      return call.get();
    } finally {
      thread.setContextClassLoader(saved);
    }
  }

  public static void run(ClassLoader loader, Runnable action) {
    Thread thread = Thread.currentThread();
    ClassLoader saved = thread.getContextClassLoader();
    thread.setContextClassLoader(loader);
    try {
      action.run();
    } finally {
      thread.setContextClassLoader(saved);
    }
  }
}
