package io.sharesink.connect.rest;

import io.sharesink.connect.ShareModeForm.ClassKind;
import io.sharesink.connect.ShareModeForm.ClassResolver;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * Tells a sink connector class from others through this plugin's class loader, whose parent (the
 * worker's delegating loader) routes every installed plugin's class name and alias to that plugin's
 * own loader. Classes are loaded, never initialised.
 */
final class PluginClassResolver implements ClassResolver {

  private final ClassLoader loader;

  PluginClassResolver(ClassLoader loader) {
    this.loader = loader;
  }

  @Override
  public ClassKind kind(String connectorClass) {
    Class<?> loaded;
    try {
      loaded = loader.loadClass(connectorClass);
    } catch (ClassNotFoundException | LinkageError e) {
      return ClassKind.UNKNOWN;
    }
    return SinkConnector.class.isAssignableFrom(loaded) ? ClassKind.SINK : ClassKind.OTHER;
  }
}
