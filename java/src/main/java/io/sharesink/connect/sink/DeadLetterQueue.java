package io.sharesink.connect.sink;

import java.util.concurrent.CompletableFuture;

/** Writes a failed record to a dead letter queue; the future completes when the write is acked. */
public interface DeadLetterQueue extends AutoCloseable {

  CompletableFuture<Void> write(
      RawRecord record, ErrorStage stage, Class<?> executingClass, Throwable error);

  @Override
  void close();
}
