package io.sharesink.connect.sink;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;

/**
 * A legacy sink written for these tests, for behaviours no stock sink shows on demand (a failure
 * deferred to the next put, retriable outages, pause, an empty preCommit). Everything the driver
 * does to it is recorded.
 */
class ScriptedSinkTask extends SinkTask {

  final List<List<SinkRecord>> puts = new CopyOnWriteArrayList<>();
  final List<Collection<TopicPartition>> opens = new CopyOnWriteArrayList<>();
  final List<Collection<TopicPartition>> closes = new CopyOnWriteArrayList<>();
  final List<Map<TopicPartition, OffsetAndMetadata>> preCommits = new CopyOnWriteArrayList<>();
  final List<ClassLoader> putLoaders = new CopyOnWriteArrayList<>();
  volatile boolean stopped;
  volatile Consumer<Collection<SinkRecord>> onPut = records -> {};
  volatile Function<Map<TopicPartition, OffsetAndMetadata>, Map<TopicPartition, OffsetAndMetadata>>
      onPreCommit = offsets -> offsets;

  @Override
  public String version() {
    return "test";
  }

  @Override
  public void start(Map<String, String> props) {
    if (props.containsKey("test.fail.start")) {
      throw new IllegalStateException("cannot reach the database");
    }
    if (props.containsKey("test.fail.start.missing.class")) {
      throw new NoClassDefFoundError("com/example/driver/Missing");
    }
  }

  @Override
  public void open(Collection<TopicPartition> partitions) {
    opens.add(List.copyOf(partitions));
  }

  @Override
  public void put(Collection<SinkRecord> records) {
    putLoaders.add(Thread.currentThread().getContextClassLoader());
    puts.add(new ArrayList<>(records));
    onPut.accept(records);
  }

  @Override
  public Map<TopicPartition, OffsetAndMetadata> preCommit(
      Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
    preCommits.add(Map.copyOf(currentOffsets));
    return onPreCommit.apply(currentOffsets);
  }

  @Override
  public void close(Collection<TopicPartition> partitions) {
    closes.add(List.copyOf(partitions));
  }

  @Override
  public void stop() {
    stopped = true;
  }

  SinkTaskContext ctx() {
    return context;
  }

  List<SinkRecord> allPut() {
    List<SinkRecord> all = new ArrayList<>();
    puts.forEach(all::addAll);
    return all;
  }
}
