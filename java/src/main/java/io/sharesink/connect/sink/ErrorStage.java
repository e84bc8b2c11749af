package io.sharesink.connect.sink;

/**
 * Where a record failed. The names are the Connect runtime's {@code Stage} names, which end up in
 * the {@code __connect.errors.stage} DLQ header and in error logs.
 */
public enum ErrorStage {
  KEY_CONVERTER,
  VALUE_CONVERTER,
  HEADER_CONVERTER,
  TRANSFORMATION,
  TASK_PUT
}
