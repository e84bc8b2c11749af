package io.sharesink.connect.sink;

import io.sharesink.engine.ShareConsumerEngine;
import java.util.Objects;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * What a {@link ShareSinkDriver} is made of, as {@link ShareSinkDriverBuilder} wires it: the legacy
 * task, started, with the context it was initialized with; the share-group member; the record
 * pipeline (converters, header converter, transforms); the settings and error handling; how a
 * failed task is restarted in place; the clock and what runs the lock keeper off the task thread.
 *
 * @param task a started legacy task, initialized with {@code context}
 * @param context the context the task was initialized with
 * @param engine one share-group member, subscribed; owned (and closed) by the caller; its {@code
 *     acknowledge} must be callable from the keeper's thread
 * @param pipeline converters, header converter, transforms and predicates; the driver closes it at
 *     stop
 * @param config share.* and errors.* settings
 * @param errors error logging and DLQ (the same instance the context was built with); closed at
 *     stop
 * @param restarts restarts the legacy task in place after a failure
 * @param taskName for logs, e.g. {@code orders-to-pg-3}
 * @param time the clock every timeout and backoff of the driver reads
 * @param keeperTimer runs the lock keeper off the task thread
 */
record DriverParts(
    SinkTask task,
    ShareSinkTaskContext context,
    ShareConsumerEngine engine,
    RecordPipeline pipeline,
    SinkDriverConfig config,
    ErrorHandling errors,
    LegacyTaskRestarts restarts,
    String taskName,
    Time time,
    KeeperTimer keeperTimer) {

  DriverParts {
    Objects.requireNonNull(task, "task");
    Objects.requireNonNull(context, "context");
    Objects.requireNonNull(engine, "engine");
    Objects.requireNonNull(pipeline, "pipeline");
    Objects.requireNonNull(config, "config");
    Objects.requireNonNull(errors, "errors");
    Objects.requireNonNull(restarts, "restarts");
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(keeperTimer, "keeperTimer");
  }
}
