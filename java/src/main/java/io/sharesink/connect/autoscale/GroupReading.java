package io.sharesink.connect.autoscale;

import java.util.Map;
import org.apache.kafka.common.TopicPartition;

/**
 * One reading of the share group's load: per partition, its end offset (the log's high watermark,
 * ListOffsets latest) and the group's lag on it (records not yet acknowledged past the start
 * offset, ListShareGroupOffsets). Only partitions with both are listed.
 */
public record GroupReading(Map<TopicPartition, Load> partitions) {

  public GroupReading {
    partitions = Map.copyOf(partitions);
  }

  /** One partition's end offset and the group's lag on it. */
  public record Load(long endOffset, long lag) {}

  /** The lag over every partition. */
  public long totalLag() {
    return partitions.values().stream().mapToLong(l -> Math.max(0, l.lag())).sum();
  }
}
