package io.sharesink.engine;

import java.util.ArrayList;
import java.util.List;

/**
 * A batch of acknowledgement decisions: inclusive offset ranges of one partition, one type each.
 */
public final class Acknowledgements {

  /** One inclusive range of offsets of one partition, acknowledged with one type. */
  public record Range(
      String topic, int partition, long firstOffset, long lastOffset, AckType type) {
    public Range {
      if (firstOffset > lastOffset) {
        throw new IllegalArgumentException(
            "firstOffset " + firstOffset + " > lastOffset " + lastOffset);
      }
    }
  }

  private final List<Range> ranges = new ArrayList<>();

  public Acknowledgements add(
      String topic, int partition, long firstOffset, long lastOffset, AckType type) {
    ranges.add(new Range(topic, partition, firstOffset, lastOffset, type));
    return this;
  }

  public Acknowledgements add(String topic, int partition, long offset, AckType type) {
    return add(topic, partition, offset, offset, type);
  }

  public List<Range> ranges() {
    return ranges;
  }

  public boolean isEmpty() {
    return ranges.isEmpty();
  }

  /** The number of ranges. */
  public int size() {
    return ranges.size();
  }

  /** The number of offsets the ranges cover. */
  public long recordCount() {
    long count = 0;
    for (Range range : ranges) {
      count += range.lastOffset() - range.firstOffset() + 1;
    }
    return count;
  }

  public void clear() {
    ranges.clear();
  }
}
