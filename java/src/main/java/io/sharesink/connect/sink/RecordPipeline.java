package io.sharesink.connect.sink;

import io.sharesink.connect.sink.ErrorHandling.RecordFailedException;
import io.sharesink.engine.ShareBatch;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.storage.Converter;
import org.apache.kafka.connect.storage.HeaderConverter;

/**
 * Turns a raw share record into what the sink runtime would have put: key and value converted with
 * the header-aware three-argument calls, each header through the header converter, a SinkRecord
 * carrying the original topic/partition/offset (plus, when asked, a header with the record's
 * delivery count), then the transform chain. Each stage runs under the error handling's retries; a
 * failure leaves as {@link RecordFailedException}.
 */
final class RecordPipeline implements AutoCloseable {

  private final Converter keyConverter;
  private final Converter valueConverter;
  private final HeaderConverter headerConverter;
  private final TransformChain transforms;
  private final ErrorHandling errors;
  private final boolean internalRecords;

  /** Name of the delivery count header, or null for none. */
  private final String deliveryCountHeader;

  /**
   * @param deliveryCountHeader the header that carries each record's delivery count, or null (or
   *     empty) for none
   */
  RecordPipeline(
      Converter keyConverter,
      Converter valueConverter,
      HeaderConverter headerConverter,
      TransformChain transforms,
      ErrorHandling errors,
      String deliveryCountHeader) {
    this.keyConverter = keyConverter;
    this.valueConverter = valueConverter;
    this.headerConverter = headerConverter;
    this.transforms = transforms;
    this.errors = errors;
    this.internalRecords = InternalSinkRecords.available();
    this.deliveryCountHeader =
        deliveryCountHeader == null || deliveryCountHeader.isEmpty() ? null : deliveryCountHeader;
  }

  boolean buildsInternalRecords() {
    return internalRecords;
  }

  /** The record to put, or null when a transform dropped it. */
  SinkRecord convert(RawRecord raw, BooleanSupplier stopping) {
    String topic = raw.topic();
    RecordHeaders kafkaHeaders = raw.kafkaHeaders();
    SchemaAndValue key =
        errors.execute(
            ErrorStage.KEY_CONVERTER,
            keyConverter.getClass(),
            () ->
                LoaderSwap.call(
                    LoaderSwap.loaderOf(keyConverter),
                    () -> keyConverter.toConnectData(topic, kafkaHeaders, raw.key())),
            stopping);
    SchemaAndValue value =
        errors.execute(
            ErrorStage.VALUE_CONVERTER,
            valueConverter.getClass(),
            () ->
                LoaderSwap.call(
                    LoaderSwap.loaderOf(valueConverter),
                    () -> valueConverter.toConnectData(topic, kafkaHeaders, raw.value())),
            stopping);
    ConnectHeaders headers =
        errors.execute(
            ErrorStage.HEADER_CONVERTER,
            headerConverter.getClass(),
            () -> LoaderSwap.call(LoaderSwap.loaderOf(headerConverter), () -> headers(raw)),
            stopping);
    if (deliveryCountHeader != null) {
      // Added before the transforms, so an SMT or predicate can route on it. One header only: a
      // header of that name the producer wrote would otherwise shadow the broker's count.
      headers.remove(deliveryCountHeader);
      headers.addInt(deliveryCountHeader, raw.deliveryCount());
    }
    // -1 means "no timestamp" (null in Connect); brokers accept no other negative timestamp.
    Long timestamp = raw.timestamp() < 0 ? null : raw.timestamp();
    SinkRecord record =
        new SinkRecord(
            topic,
            raw.partition(),
            key.schema(),
            key.value(),
            value.schema(),
            value.value(),
            raw.offset(),
            timestamp,
            raw.timestampType(),
            headers,
            topic,
            raw.partition(),
            raw.offset());
    for (TransformChain.Stage stage : transforms.stages()) {
      SinkRecord input = record;
      record =
          errors.execute(
              ErrorStage.TRANSFORMATION,
              stage.transformationClass(),
              () -> stage.apply(input),
              stopping);
      if (record == null) {
        return null;
      }
    }
    return internalRecords ? InternalSinkRecords.wrap(raw, kafkaHeaders, record) : record;
  }

  private ConnectHeaders headers(RawRecord raw) {
    ConnectHeaders headers = new ConnectHeaders();
    for (ShareBatch.Header header : raw.headers()) {
      SchemaAndValue converted =
          headerConverter.toConnectHeader(raw.topic(), header.key(), header.value());
      headers.add(header.key(), converted);
    }
    return headers;
  }

  @Override
  public void close() {
    transforms.close();
    closeQuietly(keyConverter);
    closeQuietly(valueConverter);
    closeQuietly(headerConverter);
  }

  /**
   * Closes a converter (or any plugin) under its own loader when it is closeable; logs a failure.
   */
  static void closeQuietly(Object plugin) {
    if (plugin instanceof AutoCloseable closeable) {
      try {
        LoaderSwap.run(
            LoaderSwap.loaderOf(plugin),
            () -> {
              try {
                closeable.close();
              } catch (Exception e) {
                throw new RuntimeException(e);
              }
            });
      } catch (RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(RecordPipeline.class)
            .warn("Failed to close {}", plugin.getClass().getName(), e);
      }
    }
  }
}
