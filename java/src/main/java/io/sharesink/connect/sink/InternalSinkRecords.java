package io.sharesink.connect.sink;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.sink.SinkRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds the runtime's {@code org.apache.kafka.connect.runtime.InternalSinkRecord} (a SinkRecord
 * that carries the raw ConsumerRecord) when the worker's connect-runtime is reachable, as the sink
 * runtime hands every task. Some sinks depend on it: Debezium's JDBC sink tracks its own offsets
 * only for InternalSinkRecords, and without that a failed write it defers to the next put would go
 * unnoticed by its preCommit. It is internal API (its constructor changed in 3.8), so it is reached
 * by reflection and we fall back to plain SinkRecords when it does not fit.
 *
 * <p>Checked against 4.4: {@code InternalSinkRecord(ProcessingContext<ConsumerRecord<byte[],
 * byte[]>>, SinkRecord)} and {@code ProcessingContext(T original)}, both public.
 */
final class InternalSinkRecords {

  private static final Logger log = LoggerFactory.getLogger(InternalSinkRecords.class);

  private static final String RECORD_CLASS = "org.apache.kafka.connect.runtime.InternalSinkRecord";
  private static final String CONTEXT_CLASS =
      "org.apache.kafka.connect.runtime.errors.ProcessingContext";

  /** (Object original) → ProcessingContext, then (ProcessingContext, SinkRecord) → record. */
  private static final MethodHandle NEW_CONTEXT;

  private static final MethodHandle NEW_RECORD;

  static {
    MethodHandle newContext = null;
    MethodHandle newRecord = null;
    try {
      // org.apache.kafka.* always comes from the worker's class path, next to connect-api.
      ClassLoader loader = SinkRecord.class.getClassLoader();
      Class<?> contextClass = Class.forName(CONTEXT_CLASS, false, loader);
      Class<?> recordClass = Class.forName(RECORD_CLASS, false, loader);
      MethodHandles.Lookup lookup = MethodHandles.publicLookup();
      newContext =
          lookup
              .findConstructor(contextClass, MethodType.methodType(void.class, Object.class))
              .asType(MethodType.methodType(Object.class, Object.class));
      newRecord =
          lookup
              .findConstructor(
                  recordClass, MethodType.methodType(void.class, contextClass, SinkRecord.class))
              .asType(MethodType.methodType(SinkRecord.class, Object.class, SinkRecord.class));
    } catch (ReflectiveOperationException | LinkageError e) {
      log.info(
          "{} is not usable ({}); legacy tasks get plain SinkRecords", RECORD_CLASS, e.toString());
      newContext = null;
      newRecord = null;
    }
    NEW_CONTEXT = newContext;
    NEW_RECORD = newRecord;
  }

  private InternalSinkRecords() {}

  static boolean available() {
    return NEW_RECORD != null;
  }

  /**
   * {@code record} wrapped with its raw original, whose headers are {@code kafkaHeaders} (built
   * once per record, see {@link RawRecord#kafkaHeaders}), or {@code record} itself when
   * unavailable.
   */
  static SinkRecord wrap(RawRecord raw, RecordHeaders kafkaHeaders, SinkRecord record) {
    if (NEW_RECORD == null) {
      return record;
    }
    try {
      Object context = NEW_CONTEXT.invokeExact((Object) raw.toConsumerRecord(kafkaHeaders));
      return (SinkRecord) NEW_RECORD.invokeExact(context, record);
    } catch (Throwable e) {
      if (e instanceof Error error) {
        throw error;
      }
      log.debug("Could not build an InternalSinkRecord for {}", raw, e);
      return record;
    }
  }
}
