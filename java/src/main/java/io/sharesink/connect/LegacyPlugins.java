package io.sharesink.connect;

import io.sharesink.connect.sink.LoaderSwap;
import java.lang.reflect.InvocationTargetException;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * Finds and instantiates the legacy sink's classes, which usually live in another plugin directory.
 * Names are resolved through the thread context class loader: during validation and start the
 * worker sets it to our plugin loader, whose parent (the worker's delegating loader) routes a
 * scanned plugin's name, or alias, to that plugin's own loader.
 */
final class LegacyPlugins {

  private LegacyPlugins() {}

  /**
   * Loads {@code className} through the context class loader and checks it is a sink connector.
   *
   * @throws ConfigException naming {@code configKey} when it is not found or not a sink
   */
  static Class<? extends SinkConnector> loadSinkConnectorClass(String configKey, String className) {
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    if (loader == null) {
      loader = LegacyPlugins.class.getClassLoader();
    }
    Class<?> loaded;
    try {
      // ClassLoader#loadClass, like the worker's Plugins, so that plugin aliases resolve too.
      loaded = loader.loadClass(className);
    } catch (ClassNotFoundException | LinkageError e) {
      throw new ConfigException(
          configKey,
          className,
          "cannot load this class through the worker's plugin class loaders ("
              + e
              + "); is the sink connector installed in a plugin.path directory of this worker?");
    }
    if (!SinkConnector.class.isAssignableFrom(loaded)) {
      throw new ConfigException(
          configKey,
          className,
          "is a " + loaded.getSuperclass().getName() + ", not a SinkConnector");
    }
    return loaded.asSubclass(SinkConnector.class);
  }

  /**
   * Instantiates a legacy plugin class with the context class loader set to the class's own loader,
   * as the worker does: static initialisers and constructors may read it (KAFKA-8340).
   */
  static <T> T newInstance(Class<T> pluginClass) {
    return LoaderSwap.call(
        pluginClass.getClassLoader(),
        () -> {
          try {
            return pluginClass.getDeclaredConstructor().newInstance();
          } catch (InvocationTargetException e) {
            throw new ConnectException(
                "cannot instantiate " + pluginClass.getName() + ": " + e.getCause(), e.getCause());
          } catch (ReflectiveOperationException | LinkageError e) {
            throw new ConnectException("cannot instantiate " + pluginClass.getName() + ": " + e, e);
          }
        });
  }
}
