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

  public int size() {
    return ranges.size();
  }

  public void clear() {
    ranges.clear();
  }
}
