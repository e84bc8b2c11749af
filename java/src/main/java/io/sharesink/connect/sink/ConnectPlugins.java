package io.sharesink.connect.sink;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;
import org.apache.kafka.connect.storage.SimpleHeaderConverter;

/**
 * Creates converters the way the worker does for a connector that sets them: the class named by
 * {@code key.converter}/{@code value.converter}/{@code header.converter}, instantiated and
 * configured under its own class loader with the {@code <key>.}-prefixed settings (prefix
 * stripped); the header converter also gets {@code converter.type=header}.
 */
public final class ConnectPlugins {

  private ConnectPlugins() {}

  /**
   * @param props the connector configuration
   * @param key {@code key.converter} or {@code value.converter}; a missing setting is an error (the
   *     worker's defaults are merged into the props before)
   * @param loader resolves class names and aliases (the task's context loader on a worker)
   */
  public static Converter newConverter(Map<String, String> props, String key, ClassLoader loader) {
    Converter converter = newInstance(props, key, null, loader, Converter.class);
    Map<String, String> config = withPrefix(props, key + ".");
    boolean isKey = key.startsWith("key.");
    LoaderSwap.run(LoaderSwap.loaderOf(converter), () -> converter.configure(config, isKey));
    return converter;
  }

  /** {@code header.converter}, defaulting to Connect's {@link SimpleHeaderConverter}. */
  public static HeaderConverter newHeaderConverter(Map<String, String> props, ClassLoader loader) {
    HeaderConverter converter =
        newInstance(
            props,
            "header.converter",
            SimpleHeaderConverter.class.getName(),
            loader,
            HeaderConverter.class);
    Map<String, String> config = withPrefix(props, "header.converter.");
    config.put("converter.type", "header");
    LoaderSwap.run(LoaderSwap.loaderOf(converter), () -> converter.configure(config));
    return converter;
  }

  private static <T> T newInstance(
      Map<String, String> props,
      String key,
      String defaultClass,
      ClassLoader loader,
      Class<T> base) {
    String className = props.getOrDefault(key, defaultClass);
    if (className == null || className.isBlank()) {
      throw new ConfigException(key, className, "No converter set and no default known");
    }
    return instantiate(key, className, loader, base);
  }

  /**
   * Loads {@code className} (the value of setting {@code key}) through {@code loader} and makes an
   * instance under the class's own loader, as the runtime's {@code Plugins.newPlugin} does (static
   * initialisers read the context loader). Failures name the key.
   */
  static <T> T instantiate(String key, String className, ClassLoader loader, Class<T> base) {
    if (className == null || className.isBlank()) {
      throw new ConfigException(key, className, "Missing class name");
    }
    Class<?> cls;
    try {
      cls = loader.loadClass(className.trim());
    } catch (ClassNotFoundException e) {
      throw new ConfigException(key, className, "Class cannot be found: " + e);
    }
    if (!base.isAssignableFrom(cls)) {
      throw new ConfigException(key, className, "Not a " + base.getSimpleName());
    }
    Class<?> pluginClass = cls;
    ClassLoader pluginLoader =
        cls.getClassLoader() != null ? cls.getClassLoader() : ClassLoader.getSystemClassLoader();
    return base.cast(LoaderSwap.call(pluginLoader, () -> Utils.newInstance(pluginClass)));
  }

  /** The entries of {@code props} under {@code prefix}, with the prefix taken off. */
  static Map<String, String> withPrefix(Map<String, String> props, String prefix) {
    Map<String, String> result = new HashMap<>();
    props.forEach(
        (k, v) -> {
          if (k.startsWith(prefix)) {
            result.put(k.substring(prefix.length()), v);
          }
        });
    return result;
  }
}
