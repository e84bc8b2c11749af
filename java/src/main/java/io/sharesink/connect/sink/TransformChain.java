package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.transforms.Transformation;
import org.apache.kafka.connect.transforms.predicates.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The single message transforms of a sink, each with its optional predicate, built from Connect's
 * own keys: {@code transforms}, {@code transforms.<a>.type}, {@code transforms.<a>.*}, {@code
 * transforms.<a>.predicate}, {@code transforms.<a>.negate}, {@code predicates}, {@code
 * predicates.<p>.type}, {@code predicates.<p>.*}. Every call into a transform or predicate runs
 * with the TCCL set to its plugin's loader.
 */
public final class TransformChain implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(TransformChain.class);

  /** One transform, applied when its predicate (if any) matches, or does not when negated. */
  public static final class Stage {
    private final String alias;
    private final Transformation<SinkRecord> transformation;
    private final Predicate<SinkRecord> predicate;
    private final boolean negate;

    public Stage(
        String alias,
        Transformation<SinkRecord> transformation,
        Predicate<SinkRecord> predicate,
        boolean negate) {
      this.alias = alias;
      this.transformation = transformation;
      this.predicate = predicate;
      this.negate = negate;
    }

    public String alias() {
      return alias;
    }

    public Class<?> transformationClass() {
      return transformation.getClass();
    }

    /** The transformed record, the same record when the predicate says skip, or null (drop). */
    public SinkRecord apply(SinkRecord record) {
      if (predicate != null) {
        boolean matches =
            LoaderSwap.call(LoaderSwap.loaderOf(predicate), () -> predicate.test(record));
        if (matches == negate) {
          return record;
        }
      }
      return LoaderSwap.call(
          LoaderSwap.loaderOf(transformation), () -> transformation.apply(record));
    }

    void close() {
      closeQuietly(transformation);
      if (predicate != null) {
        closeQuietly(predicate);
      }
    }
  }

  private final List<Stage> stages;

  public TransformChain(List<Stage> stages) {
    this.stages = List.copyOf(stages);
  }

  public List<Stage> stages() {
    return stages;
  }

  /**
   * Builds the chain from a connector configuration, loading classes through {@code loader} (the
   * task's context loader: on a worker it resolves plugin aliases and classes of other plugin
   * directories).
   */
  public static TransformChain fromConfig(Map<String, String> props, ClassLoader loader) {
    List<Stage> stages = new ArrayList<>();
    List<AutoCloseable> created = new ArrayList<>();
    try {
      for (String alias : list(props.get("transforms"))) {
        String prefix = "transforms." + alias + ".";
        Map<String, String> config = ConnectPlugins.withPrefix(props, prefix);
        String predicateAlias = config.remove("predicate");
        String negateValue = config.remove("negate");
        if (negateValue != null && predicateAlias == null) {
          throw new ConfigException(
              prefix + "negate", negateValue, "negate requires a predicate on the transform");
        }
        Transformation<SinkRecord> transformation =
            newPlugin(loader, props, prefix + "type", Transformation.class);
        created.add(transformation);
        LoaderSwap.run(LoaderSwap.loaderOf(transformation), () -> transformation.configure(config));
        Predicate<SinkRecord> predicate = null;
        if (predicateAlias != null && !predicateAlias.isBlank()) {
          String predicatePrefix = "predicates." + predicateAlias.trim() + ".";
          Predicate<SinkRecord> newPredicate =
              newPlugin(loader, props, predicatePrefix + "type", Predicate.class);
          created.add(newPredicate);
          Map<String, String> predicateConfig = ConnectPlugins.withPrefix(props, predicatePrefix);
          LoaderSwap.run(
              LoaderSwap.loaderOf(newPredicate), () -> newPredicate.configure(predicateConfig));
          predicate = newPredicate;
        }
        boolean negate = negateValue != null && Boolean.parseBoolean(negateValue.trim());
        stages.add(new Stage(alias, transformation, predicate, negate));
      }
    } catch (RuntimeException e) {
      created.forEach(TransformChain::closeQuietly);
      throw e;
    }
    return new TransformChain(stages);
  }

  @SuppressWarnings("unchecked")
  private static <T> T newPlugin(
      ClassLoader loader, Map<String, String> props, String typeKey, Class<?> base) {
    return (T) ConnectPlugins.instantiate(typeKey, props.get(typeKey), loader, base);
  }

  private static List<String> list(String value) {
    List<String> items = new ArrayList<>();
    if (value == null) {
      return items;
    }
    for (String item : value.split(",")) {
      if (!item.isBlank()) {
        items.add(item.trim());
      }
    }
    return items;
  }

  private static void closeQuietly(AutoCloseable plugin) {
    Thread thread = Thread.currentThread();
    ClassLoader saved = thread.getContextClassLoader();
    thread.setContextClassLoader(LoaderSwap.loaderOf(plugin));
    try {
      plugin.close();
    } catch (Exception e) {
      log.warn("Failed to close {}", plugin.getClass().getName(), e);
    } finally {
      thread.setContextClassLoader(saved);
    }
  }

  @Override
  public void close() {
    for (Stage stage : stages) {
      stage.close();
    }
  }
}
