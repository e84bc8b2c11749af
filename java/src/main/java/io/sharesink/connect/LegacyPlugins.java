package io.sharesink.connect;

import io.sharesink.connect.sink.LoaderSwap;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Modifier;
import java.util.Optional;
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
    Optional<String> problem = notARunnableSink(loaded);
    if (problem.isPresent()) {
      throw new ConfigException(configKey, className, problem.get());
    }
    return loaded.asSubclass(SinkConnector.class);
  }

  /**
   * Why {@code loaded} cannot be run as a sink connector, in the words of an error on the key: not
   * a {@link SinkConnector} (an interface, {@code java.lang.Object}, another kind of class),
   * abstract, not public, or without the public no-argument constructor the worker's own plugin
   * loading requires. Empty when it is one.
   */
  static Optional<String> notARunnableSink(Class<?> loaded) {
    if (!SinkConnector.class.isAssignableFrom(loaded)) {
      String what;
      if (loaded.isInterface()) {
        what = "an interface";
      } else if (loaded.isArray() || loaded.isPrimitive() || loaded.getSuperclass() == null) {
        what = "not a connector class";
      } else {
        what = "a " + loaded.getSuperclass().getName();
      }
      return Optional.of("is " + what + ", not a SinkConnector");
    }
    int modifiers = loaded.getModifiers();
    if (Modifier.isAbstract(modifiers)) {
      return Optional.of("is an abstract class: name a concrete SinkConnector class");
    }
    if (!Modifier.isPublic(modifiers)) {
      return Optional.of("is not a public class, so the worker could not instantiate it");
    }
    try {
      loaded.getConstructor();
    } catch (NoSuchMethodException | SecurityException | LinkageError e) {
      return Optional.of(
          "has no public no-argument constructor, so the worker could not instantiate it");
    }
    return Optional.empty();
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
