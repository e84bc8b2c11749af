package io.sharesink.connect.sink;

import io.sharesink.engine.ShareBatch;
import java.util.List;

/** A batch of no records: what a poll that failed transiently returns. */
enum EmptyShareBatch implements ShareBatch {
  INSTANCE;

  @Override
  public int size() {
    return 0;
  }

  @Override
  public String topic(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public int partition(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public long offset(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public long timestamp(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public int timestampType(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public int deliveryCount(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public long lockDeadlineMs(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public byte[] key(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public byte[] value(int i) {
    throw new IndexOutOfBoundsException(i);
  }

  @Override
  public List<Header> headers(int i) {
    throw new IndexOutOfBoundsException(i);
  }
}
