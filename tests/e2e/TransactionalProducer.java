// Writes a topic the way an exactly-once producer does: transactions, some committed and some
// aborted, with records of a plain (non-transactional) producer written between their records,
// across the topic's partitions. Run with Java's source launcher on the Kafka client's classpath:
//
//   java -cp '<kafka lib>/*' TransactionalProducer.java BOOTSTRAP TOPIC PARTITIONS PREFIX \
//       TRANSACTIONS RECORDS_PER_TRANSACTION ABORT_EVERY PLAIN_PER_TRANSACTION [OPEN_RECORDS]
//
// Transaction t is aborted when t % ABORT_EVERY == ABORT_EVERY - 1 (ABORT_EVERY 0: none). Each
// record's value is printed on stdout as its fate: "C <value>" committed, "A <value>" aborted,
// "P <value>" plain. Last, one plain record per partition, "<prefix>-end-<partition>": a reader
// that has it read everything before it in that partition. With OPEN_RECORDS, one more transaction of that many records is left open:
// "OPEN" is printed once they are written, and the next line on stdin, "commit" or "abort",
// ends it ("COMMITTED" or "ABORTED" is printed; those records' fates are printed before "OPEN",
// as "O <value>").
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TransactionalProducer {

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    String prefix = args[3];
    int transactions = Integer.parseInt(args[4]);
    int perTransaction = Integer.parseInt(args[5]);
    int abortEvery = Integer.parseInt(args[6]);
    int plainPerTransaction = Integer.parseInt(args[7]);
    int openRecords = args.length > 8 ? Integer.parseInt(args[8]) : 0;

    Properties common = new Properties();
    common.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    common.put(ProducerConfig.ACKS_CONFIG, "all");
    common.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    Properties txnProps = new Properties();
    txnProps.putAll(common);
    txnProps.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-txn");
    txnProps.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "600000");
    StringSerializer s = new StringSerializer();
    StringBuilder fates = new StringBuilder();
    try (KafkaProducer<String, String> txn = new KafkaProducer<>(txnProps, s, s);
        KafkaProducer<String, String> plain = new KafkaProducer<>(common, s, s)) {
      txn.initTransactions();
      for (int t = 0; t < transactions; t++) {
        boolean abort = abortEvery > 0 && t % abortEvery == abortEvery - 1;
        String fate = abort ? "A" : "C";
        txn.beginTransaction();
        for (int i = 0; i < perTransaction; i++) {
          // The plain records land between this transaction's records in each partition.
          if (plainPerTransaction > 0 && i == perTransaction / 2) {
            for (int j = 0; j < plainPerTransaction; j++) {
              String value = prefix + "-p-" + t + "-" + j;
              plain.send(new ProducerRecord<>(topic, j % partitions, "p" + j, value)).get();
              fates.append("P ").append(value).append('\n');
            }
          }
          String value = prefix + "-" + fate.toLowerCase() + "-" + t + "-" + i;
          txn.send(new ProducerRecord<>(topic, i % partitions, "k" + i, value));
          fates.append(fate).append(' ').append(value).append('\n');
        }
        // Sent before the abort: abortTransaction drops what is still unsent, and an aborted
        // record that never reached the log proves nothing.
        txn.flush();
        if (abort) {
          txn.abortTransaction();
        } else {
          txn.commitTransaction();
        }
      }
      for (int p = 0; p < partitions; p++) {
        String value = prefix + "-end-" + p;
        plain.send(new ProducerRecord<>(topic, p, "end", value)).get();
        fates.append("P ").append(value).append('\n');
      }
      System.out.print(fates);
      System.out.flush();
      if (openRecords > 0) {
        txn.beginTransaction();
        for (int i = 0; i < openRecords; i++) {
          String value = prefix + "-o-" + i;
          txn.send(new ProducerRecord<>(topic, i % partitions, "o" + i, value));
          System.out.println("O " + value);
        }
        txn.flush();
        System.out.println("OPEN");
        System.out.flush();
        BufferedReader in =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = in.readLine();
        if ("commit".equals(line == null ? null : line.trim())) {
          txn.commitTransaction();
          System.out.println("COMMITTED");
        } else {
          txn.abortTransaction();
          System.out.println("ABORTED");
        }
        System.out.flush();
      }
    }
  }
}
