package io.sharesink.connect.rest;

import io.sharesink.connect.ShareModeForm;
import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which connectors are stored in the operator's form, for the answers that do not carry their
 * configuration ({@code /status}, restart, {@code ?expand=status}): a read of the herder per
 * connector waits for its thread, up to the rebalance timeout while it is busy.
 *
 * <p>Fed by everything the filters see (configurations they rewrite, config and info answers,
 * deletions), and read from the herder on this class's own thread only for a connector it does not
 * know, or knew longer than {@link #MAX_AGE} ago. A request waits at most {@link #MISS_WAIT} for
 * that read, then is answered as Connect answers it; an entry too old is answered from and
 * refreshed behind. So in the worst case a reader sees type {@code source} for a share-mode
 * connector this worker has not seen while its herder is busy, or, after the connector changed form
 * through another worker, its former type for up to {@link #MAX_AGE}.
 */
final class StoredForms implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(StoredForms.class);

  static final Duration MISS_WAIT = Duration.ofMillis(500);
  static final Duration MAX_AGE = Duration.ofSeconds(30);

  private record Known(boolean operatorForm, long atNanos) {}

  private final ClusterConfigs configs;
  private final LongSupplier nanoTime;
  private final Map<String, Known> known = new ConcurrentHashMap<>();
  private final Map<String, CompletableFuture<Boolean>> reading = new ConcurrentHashMap<>();
  private final ExecutorService reader;

  StoredForms(ClusterConfigs configs) {
    this(configs, Time.SYSTEM::nanoseconds);
  }

  StoredForms(ClusterConfigs configs, LongSupplier nanoTime) {
    this.configs = configs;
    this.nanoTime = nanoTime;
    this.reader =
        Executors.newSingleThreadExecutor(
            r -> {
              Thread t = new Thread(r, "sharesink-rest-stored-forms");
              t.setDaemon(true);
              return t;
            });
  }

  /** What the filters saw stored for {@code connector}. */
  void record(String connector, Map<String, String> storedConfig) {
    record(connector, ShareModeForm.isStoredForm(storedConfig));
  }

  void record(String connector, boolean operatorForm) {
    known.put(connector, new Known(operatorForm, nanoTime.getAsLong()));
  }

  /** Not known any more (deleted, or changed in a way the filters cannot tell). */
  void forget(String connector) {
    known.remove(connector);
  }

  /**
   * Whether each connector is stored in the operator's form: true, false, or absent when that is
   * not known within {@link #MISS_WAIT} (for all of them together).
   */
  Map<String, Boolean> operatorForms(Collection<String> connectors) {
    long now = nanoTime.getAsLong();
    Map<String, Boolean> out = new HashMap<>();
    Map<String, CompletableFuture<Boolean>> waiting = new HashMap<>();
    for (String connector : connectors) {
      Known k = known.get(connector);
      if (k != null) {
        out.put(connector, k.operatorForm());
        if (now - k.atNanos() > MAX_AGE.toNanos()) {
          readInBackground(connector);
        }
      } else {
        waiting.put(connector, readInBackground(connector));
      }
    }
    long deadline = now + MISS_WAIT.toNanos();
    for (Map.Entry<String, CompletableFuture<Boolean>> e : waiting.entrySet()) {
      long left = Math.max(0, deadline - nanoTime.getAsLong());
      try {
        Boolean form = e.getValue().get(left, TimeUnit.NANOSECONDS);
        if (form != null) {
          out.put(e.getKey(), form);
        }
      } catch (TimeoutException | ExecutionException ex) {
        // unknown for now; the read goes on and feeds the next request
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return out;
  }

  /** One read per connector at a time; its result (null: the herder could not tell) is kept. */
  private CompletableFuture<Boolean> readInBackground(String connector) {
    return reading.computeIfAbsent(
        connector,
        c -> {
          CompletableFuture<Boolean> read = new CompletableFuture<>();
          try {
            reader.execute(
                () -> {
                  try {
                    read.complete(readNow(c));
                  } catch (RuntimeException e) {
                    read.completeExceptionally(e);
                  } finally {
                    reading.remove(c, read);
                  }
                });
          } catch (RejectedExecutionException e) {
            read.complete(null); // closed: the worker is stopping
          }
          return read;
        });
  }

  private Boolean readNow(String connector) {
    ClusterConfigs.Read read = configs.read(connector);
    if (read instanceof ClusterConfigs.Found found) {
      boolean form = ShareModeForm.isStoredForm(found.config());
      record(connector, form);
      return form;
    }
    if (read instanceof ClusterConfigs.Missing) {
      forget(connector);
      return false;
    }
    log.debug(
        "The herder could not tell connector {}'s configuration: {}",
        connector,
        ((ClusterConfigs.Unavailable) read).reason());
    return null;
  }

  @Override
  public void close() {
    reader.shutdownNow();
  }
}
