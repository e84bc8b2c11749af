package io.sharesink.connect;

import java.util.function.Supplier;

/**
 * Runs code with the thread context class loader swapped, restoring it afterwards. Every call into
 * the legacy connector, its task, converters and transformations goes through here: JDBC drivers,
 * ServiceLoader users and static initialisers inside them read the context loader.
 */
final class ContextClassLoader {

  private ContextClassLoader() {}

  static <T> T call(ClassLoader loader, Supplier<T> action) {
    Thread thread = Thread.currentThread();
    ClassLoader saved = thread.getContextClassLoader();
    thread.setContextClassLoader(loader);
    try {
      return action.get();
    } finally {
      thread.setContextClassLoader(saved);
    }
  }

  static void run(ClassLoader loader, Runnable action) {
    call(
        loader,
        () -> {
          action.run();
          return null;
        });
  }
}
