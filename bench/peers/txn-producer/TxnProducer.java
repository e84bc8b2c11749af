import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The (dt) bench's producer: writes a topic in transactions, some of them aborted, as an
 * exactly-once producer leaves it for the sinks that read it.
 *
 * <pre>TxnProducer BOOTSTRAP TOPIC PARTITIONS RECORDS PER_TRANSACTION ABORT_EVERY</pre>
 *
 * <p>RECORDS records in transactions of PER_TRANSACTION records (the last one may be shorter),
 * transaction t to partition t % PARTITIONS: a partition holds runs of PER_TRANSACTION records,
 * each ended by its transaction's marker (spread over every partition, a transaction would put
 * a third as many records between markers, and a broker's batches would be a third as long).
 * Transaction t is aborted when t % ABORT_EVERY == ABORT_EVERY - 1 (never when ABORT_EVERY is 0).
 * Values are fixed-width, 10 characters like the (d) topic's "v%09d": "c%09d" for a record of a
 * committed transaction, "a%09d" for one of an aborted transaction, so a sink's output tells
 * them apart by their first character. No keys. Sends as fast as it can and prints, at the end,
 * one line: {@code committed N aborted M transactions T} (N and M in records).
 */
public final class TxnProducer {
  public static void main(String[] args) throws Exception {
    if (args.length != 6) {
      System.err.println(
          "usage: TxnProducer BOOTSTRAP TOPIC PARTITIONS RECORDS PER_TRANSACTION ABORT_EVERY");
      System.exit(2);
    }
    String topic = args[1];
    int partitions = positive(args[2], "PARTITIONS");
    long records = Long.parseLong(args[3]);
    int perTransaction = positive(args[4], "PER_TRANSACTION");
    int abortEvery = Integer.parseInt(args[5]);
    if (records < 0 || abortEvery < 0) {
      System.err.println("RECORDS and ABORT_EVERY must not be negative");
      System.exit(2);
    }
    long committed = 0;
    long aborted = 0;
    long transactions = 0;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(settings(args[0]))) {
      producer.initTransactions();
      for (long first = 0; first < records; first += perTransaction, transactions++) {
        long end = Math.min(records, first + perTransaction);
        boolean abort = abortEvery > 0 && transactions % abortEvery == abortEvery - 1;
        producer.beginTransaction();
        int partition = (int) (transactions % partitions);
        for (long i = first; i < end; i++) {
          String value = String.format("%s%09d", abort ? "a" : "c", i);
          producer.send(new ProducerRecord<>(topic, partition, null, value));
        }
        if (abort) {
          // An abort drops the batches not sent yet: flush first, so the aborted records are in
          // the log, with their abort marker after them, as a real aborted transaction leaves them.
          producer.flush();
          producer.abortTransaction();
          aborted += end - first;
        } else {
          producer.commitTransaction();
          committed += end - first;
        }
      }
    }
    System.out.printf("committed %d aborted %d transactions %d%n", committed, aborted, transactions);
  }

  private static Properties settings(String bootstrap) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    // A transactional.id of this run only: a rerun on the same cluster neither fences nor is
    // fenced by an earlier producer.
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "sharesink-bench-txn-" + UUID.randomUUID());
    // The settings the harness's produce wrote (d)'s plain topic with, so that the two topics
    // differ in their transactions, not in how their batches were filled or compressed.
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
    return p;
  }

  private static int positive(String arg, String name) {
    int v = Integer.parseInt(arg);
    if (v <= 0) {
      System.err.println(name + " must be positive");
      System.exit(2);
    }
    return v;
  }
}
