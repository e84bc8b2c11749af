package io.sharesink.testsinks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The task of {@link BufferingSinkConnector}: a buffer-until-flush sink for crash tests (a sink of
 * the tests' own: the S3/HDFS/GCS-style sinks that behave so are not served by the registries the
 * tests may use, and Kafka's FileStream sink writes every line inside put).
 *
 * <p><b>Behaviour.</b> {@code put} keeps the records in memory. In flush mode ({@code
 * roll.records=0}) {@code flush}, reached through the default {@code preCommit}, appends the
 * buffered records to this instance's durable file and fsyncs it; {@code preCommit} then returns
 * the offsets it was given. In roll mode ({@code roll.records=N}) {@code preCommit} returns {@code
 * {}} until at least N records are buffered (or a {@code roll} marker asks), then "rolls a file":
 * appends and fsyncs every buffered record and returns, per partition, the highest rolled offset +
 * 1, as an S3-style file committer does. With {@code own.offsets=true} {@code preCommit} writes
 * and fsyncs the buffer and always returns {@code {}}, as a sink that commits its own offsets does
 * (Apache Iceberg's sink commits them through its coordinator). {@code close} and {@code stop} drop
 * what is still buffered
 * (a real sink of this kind loses it too); nothing but the durable files survives a kill -9.
 *
 * <p><b>Files.</b> Durable: {@code <data.dir>/task<id>-<instance>.records}, one line per record,
 * {@code topic \t partition \t offset \t value \n}, where {@code <instance>} is new on every start
 * (a restarted task appends to a new file). Trace (not durable, but written to the OS at once, so
 * it survives a kill -9 of the worker): {@code <control.dir>/trace-task<id>.log}, one line per
 * event ({@code start}, {@code role}, {@code open}, {@code put}, {@code put-stall}, {@code
 * put-fail}, {@code precommit}, {@code close}, {@code stop}), each {@code <epoch ms> task=<id>
 * inst=<instance> role=<role> <event> ...}; record sets are written as {@code
 * topic/partition:first-last,...}. Every event is also logged at INFO.
 *
 * <p><b>Roles.</b> The first put with records makes a task claim a role: the first free letter of
 * A, B, C, ..., claimed by atomically creating {@code <control.dir>/role-<letter>} (a hard link to
 * a file holding {@code task=<id>}), so a test can tell which task got the first records whichever
 * it was. A task that starts again finds its role there.
 *
 * <p><b>Control hooks</b>, marker files in {@code <control.dir>} that the test creates, checked on
 * every {@code put} (and {@code roll} on every {@code preCommit}). A marker is named {@code
 * <who>.<action>}, {@code <who>} being a role letter, {@code task<id>} or {@code any}. One-shot
 * markers are taken (renamed atomically to {@code <name>.taken-<instance>}) by the one task that
 * acts on them, unless the file's content starts with {@code keep}, in which case it acts on every
 * call while the file exists.
 *
 * <ul>
 *   <li>{@code <who>.stall}: the put blocks (checking every 50 ms) until the file is removed; a
 *       {@code fail} marker ends the stall with the failure. Never taken.
 *   <li>{@code <who>.fail}: the put throws a (non-retriable) {@link ConnectException} without
 *       buffering its records, and the instance is broken from then on, as a sink whose connection
 *       died: its later {@code put}, {@code flush} and {@code preCommit} calls throw too, so what
 *       it buffered is never written (the final commit of a stopping task cannot flush it).
 *   <li>{@code <who>.commit}: the put calls {@code context.requestCommit()} after buffering.
 *   <li>{@code <who>.roll}: roll mode only: the next preCommit rolls whatever is buffered, however
 *       little (a time-based rotation).
 * </ul>
 */
public final class BufferingSinkTask extends SinkTask {

  private static final Logger log = LoggerFactory.getLogger(BufferingSinkTask.class);
  private static final String ROLES = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  private static final long STALL_CHECK_MS = 50;

  /** One buffered record, in original coordinates. */
  private record Buffered(String topic, int partition, long offset, String value) {}

  private final String instance = UUID.randomUUID().toString().substring(0, 8);
  private final List<Buffered> buffer = new ArrayList<>();
  private String taskId = "?";
  private String role = "-";
  private int rollRecords;
  private boolean ownOffsets;
  private Path dataDir;
  private Path controlDir;
  private Path durableFile;
  private FileChannel durable;
  private Writer trace;

  /** A fail marker made a put throw: flush and preCommit throw from then on. */
  private boolean broken;

  @Override
  public String version() {
    return "1-test";
  }

  @Override
  public void start(Map<String, String> props) {
    AbstractConfig config = new AbstractConfig(BufferingSinkConnector.CONFIG_DEF, props);
    taskId = props.getOrDefault(BufferingSinkConnector.TASK_ID, "?");
    rollRecords = config.getInt(BufferingSinkConnector.ROLL_RECORDS);
    ownOffsets = config.getBoolean(BufferingSinkConnector.OWN_OFFSETS);
    dataDir = Path.of(config.getString(BufferingSinkConnector.DATA_DIR));
    controlDir = Path.of(config.getString(BufferingSinkConnector.CONTROL_DIR));
    try {
      Files.createDirectories(dataDir);
      Files.createDirectories(controlDir);
      trace =
          Files.newBufferedWriter(
              controlDir.resolve("trace-task" + taskId + ".log"),
              StandardCharsets.UTF_8,
              StandardOpenOption.CREATE,
              StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new ConnectException(
          "buffering sink: cannot create " + dataDir + " / " + controlDir, e);
    }
    durableFile = dataDir.resolve("task" + taskId + "-" + instance + ".records");
    role = findOwnRole();
    trace(
        "start",
        "mode="
            + (ownOffsets
                ? "own-offsets"
                : rollRecords > 0 ? "roll roll.records=" + rollRecords : "flush")
            + " file="
            + durableFile.getFileName());
  }

  @Override
  public void open(Collection<TopicPartition> partitions) {
    trace("open", partitions.toString());
  }

  @Override
  public void put(Collection<SinkRecord> records) {
    failIfBroken("put");
    if (!records.isEmpty() && "-".equals(role)) {
      claimRole();
    }
    if (take("fail")) {
      broken = true;
      trace("put-fail", "n=" + records.size() + " " + ranges(records));
      throw new ConnectException(
          "buffering sink task " + taskId + " (role " + role + "): failing put as the test asked");
    }
    if (present("stall") != null) {
      trace("put-stall", "n=" + records.size() + " " + ranges(records));
      long started = System.currentTimeMillis();
      while (present("stall") != null) {
        if (take("fail")) {
          broken = true;
          trace("put-fail", "after stalling " + (System.currentTimeMillis() - started) + " ms");
          throw new ConnectException(
              "buffering sink task " + taskId + " (role " + role + "): failing a stalled put");
        }
        try {
          Thread.sleep(STALL_CHECK_MS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new ConnectException("buffering sink: interrupted while stalled", e);
        }
      }
      trace("put-unstall", "after " + (System.currentTimeMillis() - started) + " ms");
    }
    for (SinkRecord r : records) {
      Object value = r.value();
      buffer.add(
          new Buffered(
              r.originalTopic(),
              r.originalKafkaPartition(),
              r.originalKafkaOffset(),
              value == null ? "null" : value.toString()));
    }
    boolean commit = take("commit");
    if (commit) {
      context.requestCommit();
    }
    if (!records.isEmpty()) {
      trace(
          "put",
          "n="
              + records.size()
              + " buffered="
              + buffer.size()
              + (commit ? " requested-commit" : "")
              + " "
              + ranges(records));
    } else if (commit) {
      trace("put", "n=0 buffered=" + buffer.size() + " requested-commit");
    }
  }

  @Override
  public void flush(Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
    failIfBroken("flush");
    if (rollRecords == 0 && !ownOffsets) {
      writeBuffer();
    }
  }

  @Override
  public Map<TopicPartition, OffsetAndMetadata> preCommit(
      Map<TopicPartition, OffsetAndMetadata> currentOffsets) {
    failIfBroken("precommit");
    if (ownOffsets) {
      int n = buffer.size();
      String what = buffer.isEmpty() ? "" : " " + rangesOf(buffer);
      writeBuffer();
      trace(
          "precommit",
          "given=" + offsets(currentOffsets) + " wrote=" + n + " returned={}" + what);
      return new HashMap<>();
    }
    if (rollRecords == 0) {
      int n = buffer.size();
      String what = buffer.isEmpty() ? "" : " " + rangesOf(buffer);
      flush(currentOffsets);
      trace(
          "precommit",
          "given="
              + offsets(currentOffsets)
              + " wrote="
              + n
              + " returned="
              + offsets(currentOffsets)
              + what);
      return currentOffsets;
    }
    boolean forced = !buffer.isEmpty() && take("roll");
    if (buffer.size() < rollRecords && !forced) {
      trace(
          "precommit",
          "given=" + offsets(currentOffsets) + " buffered=" + buffer.size() + " returned={}");
      return new HashMap<>();
    }
    Map<TopicPartition, OffsetAndMetadata> rolled = new HashMap<>();
    for (Buffered b : buffer) {
      TopicPartition tp = new TopicPartition(b.topic, b.partition);
      OffsetAndMetadata prev = rolled.get(tp);
      if (prev == null || prev.offset() < b.offset + 1) {
        rolled.put(tp, new OffsetAndMetadata(b.offset + 1));
      }
    }
    int n = buffer.size();
    String what = rangesOf(buffer);
    writeBuffer();
    trace(
        "precommit",
        "given="
            + offsets(currentOffsets)
            + " rolled="
            + n
            + (forced ? " forced" : "")
            + " returned="
            + offsets(rolled)
            + " "
            + what);
    return rolled;
  }

  @Override
  public void close(Collection<TopicPartition> partitions) {
    int before = buffer.size();
    buffer.removeIf(b -> partitions.contains(new TopicPartition(b.topic, b.partition)));
    trace("close", partitions + " dropped=" + (before - buffer.size()));
  }

  @Override
  public void stop() {
    trace("stop", "dropped=" + buffer.size());
    buffer.clear();
    try {
      if (durable != null) {
        durable.close();
      }
      if (trace != null) {
        trace.close();
      }
    } catch (IOException e) {
      log.warn("buffering sink: close failed", e);
    }
  }

  private void failIfBroken(String where) {
    if (broken) {
      trace(where + "-fail", "broken since a failed put; buffered=" + buffer.size());
      throw new ConnectException(
          "buffering sink task " + taskId + " (role " + role + "): broken since its put failed");
    }
  }

  // ---- durable file

  private void writeBuffer() {
    if (buffer.isEmpty()) {
      return;
    }
    StringBuilder out = new StringBuilder();
    for (Buffered b : buffer) {
      out.append(b.topic)
          .append('\t')
          .append(b.partition)
          .append('\t')
          .append(b.offset)
          .append('\t')
          .append(b.value.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"))
          .append('\n');
    }
    try {
      if (durable == null) {
        durable =
            FileChannel.open(
                durableFile,
                StandardOpenOption.CREATE,
                StandardOpenOption.WRITE,
                StandardOpenOption.APPEND);
        fsyncDirectory(dataDir); // the new file's name is durable too
      }
      ByteBuffer bytes = ByteBuffer.wrap(out.toString().getBytes(StandardCharsets.UTF_8));
      while (bytes.hasRemaining()) {
        durable.write(bytes);
      }
      durable.force(true);
    } catch (IOException e) {
      throw new ConnectException("buffering sink: cannot write " + durableFile, e);
    }
    buffer.clear();
  }

  private static void fsyncDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  // ---- roles and markers

  private String findOwnRole() {
    for (char c : ROLES.toCharArray()) {
      Path file = controlDir.resolve("role-" + c);
      try {
        if (Files.readString(file).trim().equals("task=" + taskId)) {
          return String.valueOf(c);
        }
      } catch (NoSuchFileException e) {
        return "-"; // roles are claimed in order: none after the first free one
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return "-";
  }

  private void claimRole() {
    try {
      Path mine = controlDir.resolve(".claim-task" + taskId + "-" + instance);
      Files.writeString(mine, "task=" + taskId + "\n");
      try {
        for (char c : ROLES.toCharArray()) {
          Path file = controlDir.resolve("role-" + c);
          try {
            Files.createLink(file, mine); // atomic; fails when the role is taken
            role = String.valueOf(c);
            trace("role", "claimed " + role);
            return;
          } catch (FileAlreadyExistsException e) {
            if (Files.readString(file).trim().equals("task=" + taskId)) {
              role = String.valueOf(c);
              return;
            }
          }
        }
      } finally {
        Files.deleteIfExists(mine);
      }
    } catch (IOException e) {
      throw new ConnectException("buffering sink: cannot claim a role in " + controlDir, e);
    }
  }

  /** The marker for {@code action} that applies to this task, or null. */
  private Path present(String action) {
    for (String who : new String[] {role, "task" + taskId, "any"}) {
      if ("-".equals(who)) {
        continue;
      }
      Path marker = controlDir.resolve(who + "." + action);
      if (Files.exists(marker)) {
        return marker;
      }
    }
    return null;
  }

  /**
   * Whether a marker for {@code action} applies to this call: a {@code keep} marker always, a
   * one-shot marker if this task takes it (renames it) first.
   */
  private boolean take(String action) {
    Path marker = present(action);
    if (marker == null) {
      return false;
    }
    try {
      if (Files.readString(marker).startsWith("keep")) {
        return true;
      }
      Files.move(
          marker,
          marker.resolveSibling(marker.getFileName() + ".taken-" + instance),
          StandardCopyOption.ATOMIC_MOVE);
      trace("marker", "took " + marker.getFileName());
      return true;
    } catch (NoSuchFileException e) {
      return false; // another task took it
    } catch (AtomicMoveNotSupportedException e) {
      throw new ConnectException("buffering sink: " + controlDir + " cannot rename atomically", e);
    } catch (IOException e) {
      throw new ConnectException("buffering sink: cannot read " + marker, e);
    }
  }

  // ---- trace

  private void trace(String event, String details) {
    String line =
        System.currentTimeMillis()
            + " task="
            + taskId
            + " inst="
            + instance
            + " role="
            + role
            + " "
            + event
            + " "
            + details;
    log.info("buffering sink: {}", line);
    if (trace == null) {
      return;
    }
    try {
      trace.write(line);
      trace.write('\n');
      trace.flush(); // to the OS at once (no fsync): it survives a kill -9 of the worker
    } catch (IOException e) {
      log.warn("buffering sink: cannot write the trace", e);
    }
  }

  private static String offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
    Map<String, Long> sorted = new TreeMap<>();
    offsets.forEach((tp, o) -> sorted.put(tp.topic() + "/" + tp.partition(), o.offset()));
    return sorted.toString().replace(" ", "");
  }

  private static String ranges(Collection<SinkRecord> records) {
    List<Buffered> list = new ArrayList<>(records.size());
    for (SinkRecord r : records) {
      list.add(
          new Buffered(r.originalTopic(), r.originalKafkaPartition(), r.originalKafkaOffset(), ""));
    }
    return rangesOf(list);
  }

  /** {@code topic/partition:first-last,single,...} per partition, space-separated. */
  private static String rangesOf(List<Buffered> records) {
    Map<String, TreeSet<Long>> byPartition = new TreeMap<>();
    for (Buffered b : records) {
      byPartition.computeIfAbsent(b.topic + "/" + b.partition, k -> new TreeSet<>()).add(b.offset);
    }
    StringBuilder out = new StringBuilder();
    byPartition.forEach(
        (tp, offsets) -> {
          if (out.length() > 0) {
            out.append(' ');
          }
          out.append(tp).append(':');
          long first = -1;
          long last = -1;
          boolean any = false;
          for (long o : offsets) {
            if (any && o == last + 1) {
              last = o;
              continue;
            }
            if (any) {
              appendRange(out, first, last);
              out.append(',');
            }
            first = last = o;
            any = true;
          }
          appendRange(out, first, last);
        });
    return out.toString();
  }

  private static void appendRange(StringBuilder out, long first, long last) {
    out.append(first);
    if (last > first) {
      out.append('-').append(last);
    }
  }
}
