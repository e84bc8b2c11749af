package io.sharesink.connect.rest;

import io.sharesink.connect.ShareModeForm;
import io.sharesink.connect.Version;
import io.sharesink.connect.WorkerConfigHandoff;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.core.Configurable;
import java.util.Map;
import org.apache.kafka.connect.health.ConnectClusterState;
import org.apache.kafka.connect.rest.ConnectRestExtension;
import org.apache.kafka.connect.rest.ConnectRestExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The KIP's switch on a stock worker: with {@code io.sharesink.connect.rest.ShareModeRestExtension}
 * appended to the worker's {@code rest.extension.classes} list (after an authentication extension
 * listed there; {@link RestAuthentication} warns when it sees none), any sink connector created or
 * updated with {@code consumer.override.group.protocol=share} (or, with the worker setting {@value
 * ShareModeForm#WORKER_DEFAULT_CONFIG}{@code =share}, without it) runs through sharesink, while the
 * REST API goes on showing the connector as the operator wrote it. The work is done by {@link
 * ShareModeRequestFilter} and {@link ShareModeResponseFilter}; see {@link ShareModeForm} for the
 * two forms.
 *
 * <p>The worker hands the extension its configuration ({@link #configure}); sharesink's connectors
 * and tasks on this worker then take their worker defaults from it instead of reading the worker
 * file named on the command line.
 *
 * <p>With {@code admin.listeners} set, Kafka 4.2 to 4.4 call {@link #register} once per listener
 * (the regular and the admin one, each its own JAX-RS application): each gets its own filters,
 * sharing one {@link StoredForms}. On the admin listener they match nothing (it serves {@code
 * /admin/*} only).
 */
public class ShareModeRestExtension implements ConnectRestExtension {

  private static final Logger log = LoggerFactory.getLogger(ShareModeRestExtension.class);

  private boolean workerDefaultShare;
  private StoredForms storedForms;

  @Override
  public String version() {
    return Version.get();
  }

  @Override
  public void configure(Map<String, ?> workerConfig) {
    workerDefaultShare = ShareModeForm.workerDefaultIsShare(workerConfig);
    WorkerConfigHandoff.fromRestExtension(workerConfig);
    RestAuthentication.warning(workerConfig, ShareModeRestExtension.class.getName())
        .ifPresent(log::warn);
  }

  @Override
  public void register(ConnectRestExtensionContext context) {
    registerFilters(context, storedForms(context.clusterState()));
    log.info(
        "sharesink REST extension {} registered: sink connectors with {}=share{} run on share"
            + " groups",
        version(),
        ShareModeForm.FLAG_CONFIG,
        workerDefaultShare
            ? " or without that key (" + ShareModeForm.WORKER_DEFAULT_CONFIG + "=share)"
            : "");
  }

  /**
   * Every filter of the extension, on one listener's application. Request filters are registered at
   * a priority after the worker's authentication and authorization ({@link
   * ShareModeRequestFilter#PRIORITY}); none of them is pre-matching.
   */
  private void registerFilters(ConnectRestExtensionContext context, StoredForms forms) {
    Configurable<?> listener = context.configurable();
    ClusterConfigs configs = new ClusterConfigs(context.clusterState());
    listener.register(
        new ShareModeRequestFilter(
            workerDefaultShare,
            new PluginClassResolver(ShareModeRestExtension.class.getClassLoader()),
            configs),
        ShareModeRequestFilter.PRIORITY);
    listener.register(new ShareModeResponseFilter(forms), Priorities.USER);
    listener.register(
        new ShareOffsetsFilter(configs, context.clusterState()), ShareModeRequestFilter.PRIORITY);
  }

  /** One per extension, however many listeners it is registered on. */
  private synchronized StoredForms storedForms(ConnectClusterState state) {
    if (storedForms == null) {
      storedForms = new StoredForms(new ClusterConfigs(state));
    }
    return storedForms;
  }

  @Override
  public synchronized void close() {
    if (storedForms != null) {
      storedForms.close();
      storedForms = null;
    }
    WorkerConfigHandoff.forgetRestExtension();
  }
}
