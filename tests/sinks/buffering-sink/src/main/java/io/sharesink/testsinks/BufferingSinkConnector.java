package io.sharesink.testsinks;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink of the end-to-end tests' own that keeps what {@code put} gives it in memory and writes it
 * to a durable file only in {@code flush}/{@code preCommit}, as the S3, HDFS and GCS sinks do.
 * Those sinks are not served by the package registries these tests may use, and Kafka's FileStream
 * sink hands every line to the OS inside {@code put} (a kill -9 cannot lose a line it was given),
 * so neither can show a record ACCEPTed before the sink had it durably. See {@link
 * BufferingSinkTask} for the behaviour, the files and the control hooks.
 *
 * <p>Settings: {@value #DATA_DIR} (required), {@value #CONTROL_DIR} (required), {@value
 * #ROLL_RECORDS} (0, the default: flush mode), {@value #OWN_OFFSETS} (false). Each task config also
 * gets {@value #TASK_ID}, its index, which names its files.
 */
public final class BufferingSinkConnector extends SinkConnector {

  public static final String DATA_DIR = "data.dir";
  public static final String CONTROL_DIR = "control.dir";
  public static final String ROLL_RECORDS = "roll.records";
  public static final String OWN_OFFSETS = "own.offsets";
  public static final String TASK_ID = "buffering.task.id";

  static final ConfigDef CONFIG_DEF =
      new ConfigDef()
          .define(
              DATA_DIR,
              ConfigDef.Type.STRING,
              ConfigDef.NO_DEFAULT_VALUE,
              ConfigDef.Importance.HIGH,
              "Directory of the durable files: one per task instance, one line per record"
                  + " (topic, partition, offset, value, tab-separated), appended and fsynced in"
                  + " flush/preCommit.")
          .define(
              CONTROL_DIR,
              ConfigDef.Type.STRING,
              ConfigDef.NO_DEFAULT_VALUE,
              ConfigDef.Importance.HIGH,
              "Directory of the control marker files the test creates, the role claims and the"
                  + " (non-durable) trace files.")
          .define(
              ROLL_RECORDS,
              ConfigDef.Type.INT,
              0,
              ConfigDef.Range.atLeast(0),
              ConfigDef.Importance.MEDIUM,
              "0: flush mode (preCommit writes the buffer and returns the offsets it was given)."
                  + " N > 0: roll mode (preCommit returns {} until N records are buffered, then"
                  + " writes them all and returns offsets covering exactly those).")
          .define(
              OWN_OFFSETS,
              ConfigDef.Type.BOOLEAN,
              false,
              ConfigDef.Importance.MEDIUM,
              "true: a sink that commits its own offsets, as Apache Iceberg's does through its"
                  + " coordinator: preCommit writes what is buffered and always returns {}, so the"
                  + " runtime never learns what is written (takes precedence over roll.records).");

  private Map<String, String> props;

  @Override
  public void start(Map<String, String> props) {
    CONFIG_DEF.parse(props); // fail early on a missing directory
    this.props = new HashMap<>(props);
  }

  @Override
  public Class<? extends Task> taskClass() {
    return BufferingSinkTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> configs = new ArrayList<>(maxTasks);
    for (int i = 0; i < maxTasks; i++) {
      Map<String, String> config = new HashMap<>(props);
      config.put(TASK_ID, Integer.toString(i));
      configs.add(config);
    }
    return configs;
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return CONFIG_DEF;
  }

  @Override
  public String version() {
    return "1-test";
  }
}
