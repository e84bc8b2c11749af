package io.sharesink.connect.sink;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A dead letter queue written by our own producer, as Connect's {@code DeadLetterQueueReporter}
 * writes it: the raw original key, value and headers, and with context headers enabled the {@code
 * __connect.errors.*} headers (values as UTF-8 strings). Used where the share group's broker-side
 * DLQ (KIP-1191) is not available. A topic that does not exist is created when the queue is, as
 * Connect creates it ({@link DeadLetterTopic}).
 */
public final class KafkaDeadLetterQueue implements DeadLetterQueue {

  private static final Logger log = LoggerFactory.getLogger(KafkaDeadLetterQueue.class);

  static final String HEADER_PREFIX = "__connect.errors.";
  static final String ORIG_TOPIC = HEADER_PREFIX + "topic";
  static final String ORIG_PARTITION = HEADER_PREFIX + "partition";
  static final String ORIG_OFFSET = HEADER_PREFIX + "offset";
  static final String CONNECTOR_NAME = HEADER_PREFIX + "connector.name";
  static final String TASK_ID = HEADER_PREFIX + "task.id";
  static final String STAGE = HEADER_PREFIX + "stage";
  static final String EXECUTING_CLASS = HEADER_PREFIX + "class.name";
  static final String EXCEPTION = HEADER_PREFIX + "exception.class.name";
  static final String EXCEPTION_MESSAGE = HEADER_PREFIX + "exception.message";
  static final String EXCEPTION_STACK_TRACE = HEADER_PREFIX + "exception.stacktrace";

  private final Producer<byte[], byte[]> producer;
  private final String topic;
  private final boolean contextHeaders;
  private final String connectorName;
  private final int taskId;

  public KafkaDeadLetterQueue(
      Producer<byte[], byte[]> producer,
      String topic,
      boolean contextHeaders,
      String connectorName,
      int taskId) {
    this.producer = producer;
    this.topic = topic;
    this.contextHeaders = contextHeaders;
    this.connectorName = connectorName;
    this.taskId = taskId;
  }

  /** How long a task's start waits for the DLQ topic to be found or created. */
  static final Duration TOPIC_SETUP_TIMEOUT = Duration.ofSeconds(30);

  /**
   * A producer from {@code producerConfig}, after an admin client from {@code adminConfig} has made
   * sure the topic exists ({@code replicationFactor} replicas if it creates it): the classic
   * runtime's DLQ uses its producer and admin settings the same way.
   */
  public static KafkaDeadLetterQueue create(
      Map<String, Object> producerConfig,
      Map<String, Object> adminConfig,
      String topic,
      short replicationFactor,
      boolean contextHeaders,
      String connectorName,
      int taskId) {
    Map<String, Object> adminSettings = new HashMap<>(adminConfig);
    adminSettings.keySet().retainAll(AdminClientConfig.configNames());
    adminSettings.put(
        AdminClientConfig.CLIENT_ID_CONFIG,
        "connector-dlq-adminclient-" + connectorName + "-" + taskId);
    try (Admin admin = Admin.create(adminSettings)) {
      DeadLetterTopic.ensure(admin, topic, replicationFactor, TOPIC_SETUP_TIMEOUT);
    }
    Map<String, Object> config = new HashMap<>(producerConfig);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
    config.putIfAbsent(ProducerConfig.ACKS_CONFIG, "all");
    config.putIfAbsent(
        ProducerConfig.CLIENT_ID_CONFIG, "connector-dlq-producer-" + connectorName + "-" + taskId);
    return new KafkaDeadLetterQueue(
        new KafkaProducer<>(config), topic, contextHeaders, connectorName, taskId);
  }

  @Override
  public CompletableFuture<Void> write(
      RawRecord record, ErrorStage stage, Class<?> executingClass, Throwable error) {
    Long timestamp = record.timestamp() < 0 ? null : record.timestamp();
    ProducerRecord<byte[], byte[]> dlqRecord =
        new ProducerRecord<>(
            topic, null, timestamp, record.key(), record.value(), record.kafkaHeaders());
    if (contextHeaders) {
      addContextHeaders(dlqRecord.headers(), record, stage, executingClass, error);
    }
    CompletableFuture<Void> written = new CompletableFuture<>();
    try {
      producer.send(
          dlqRecord,
          (metadata, e) -> {
            if (e == null) {
              written.complete(null);
            } else {
              log.error("Could not write {} to dead letter queue {}", record, topic, e);
              written.completeExceptionally(e);
            }
          });
    } catch (RuntimeException e) {
      written.completeExceptionally(e);
    }
    return written;
  }

  private void addContextHeaders(
      Headers headers,
      RawRecord record,
      ErrorStage stage,
      Class<?> executingClass,
      Throwable error) {
    headers.add(ORIG_TOPIC, utf8(record.topic()));
    headers.add(ORIG_PARTITION, utf8(String.valueOf(record.partition())));
    headers.add(ORIG_OFFSET, utf8(String.valueOf(record.offset())));
    headers.add(CONNECTOR_NAME, utf8(connectorName));
    headers.add(TASK_ID, utf8(String.valueOf(taskId)));
    headers.add(STAGE, utf8(stage.name()));
    headers.add(EXECUTING_CLASS, utf8(executingClass.getName()));
    if (error != null) {
      headers.add(EXCEPTION, utf8(error.getClass().getName()));
      headers.add(EXCEPTION_MESSAGE, utf8(error.getMessage()));
      StringWriter trace = new StringWriter();
      error.printStackTrace(new PrintWriter(trace));
      headers.add(EXCEPTION_STACK_TRACE, utf8(trace.toString()));
    }
  }

  private static byte[] utf8(String value) {
    return value == null ? null : value.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    producer.close(Duration.ofSeconds(30));
  }
}
