import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The latency bench's producer: sends records at a fixed rate, each value carrying the wall
 * time (microseconds since the epoch) at which it was handed to the producer, so whoever writes
 * it can tell how long it took to arrive.
 *
 * <pre>RateProducer BOOTSTRAP TOPIC RECORDS_PER_S SECONDS plain|json [WARMUP_TOPIC WARMUP_S]</pre>
 *
 * <p>With a warm-up topic, it first sends at the same rate to that topic for WARMUP_S seconds
 * and prints the line {@code warm} when it switches: a fresh JVM spends its first second or two
 * compiling, which on a two-core machine starves the broker and the worker it is measuring (the
 * latency runs' first-seconds episodes, both runtimes), and a real producer is long warm.
 *
 * plain: the value is "&lt;16-digit micros&gt; &lt;9-digit sequence&gt;" (one FileStream line).
 * json: a JsonConverter envelope with a schema, fields id (the sequence) and produced_us, for
 * the JDBC sink. Prints one JSON line with what it sent when done, and the stamp of its first
 * record (the clock of "the first second is not timed").
 */
public final class RateProducer {
  private static final String SCHEMA =
      "{\"type\":\"struct\",\"optional\":false,\"name\":\"bench.LatencyRow\",\"fields\":["
          + "{\"field\":\"id\",\"type\":\"int64\",\"optional\":false},"
          + "{\"field\":\"produced_us\",\"type\":\"int64\",\"optional\":false}]}";

  public static void main(String[] args) throws Exception {
    if (args.length != 5 && args.length != 7) {
      System.err.println(
          "usage: RateProducer BOOTSTRAP TOPIC RECORDS_PER_S SECONDS plain|json"
              + " [WARMUP_TOPIC WARMUP_S]");
      System.exit(2);
    }
    String topic = args[1];
    double rate = Double.parseDouble(args[2]);
    double seconds = Double.parseDouble(args[3]);
    boolean json = args[4].equals("json");
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    // The same for both runtimes; a small linger keeps the producer's own share of the
    // latency at about a millisecond without one request per record at the higher rates.
    p.put(ProducerConfig.LINGER_MS_CONFIG, "1");
    AtomicLong failed = new AtomicLong();
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      if (args.length == 7) {
        send(producer, args[5], rate, Double.parseDouble(args[6]), json, new AtomicLong());
        // No flush here: measured at 12,000 records/s, a flush at the switch sent the JIT back
        // to recompiling the send path (1.07 cores in the first 5 timed seconds against 0.67
        // without it). The warm-up's last records share a few batches with the first timed ones.
        producer.partitionsFor(topic); // its metadata, so the first timed send does not wait
        System.out.println("warm");
        System.out.flush();
      }
      long start = System.nanoTime();
      long[] sentAndFirst = send(producer, topic, rate, seconds, json, failed);
      producer.flush();
      double took = (System.nanoTime() - start) / 1e9;
      System.out.printf(
          "{\"sent\":%d,\"failed\":%d,\"seconds\":%.3f,\"records_per_s\":%.1f,"
              + "\"first_us\":%d}%n",
          sentAndFirst[0], failed.get(), took, sentAndFirst[0] / took, sentAndFirst[1]);
    }
  }

  /** Sends rate x seconds records to topic at the rate (flat out when behind); {sent, first µs}. */
  private static long[] send(
      KafkaProducer<String, String> producer,
      String topic,
      double rate,
      double seconds,
      boolean json,
      AtomicLong failed) {
    long total = Math.round(rate * seconds);
    long start = System.nanoTime();
    long sent = 0;
    long firstMicros = -1;
    while (sent < total) {
      long due = Math.min(total, (long) ((System.nanoTime() - start) / 1e9 * rate) + 1);
      if (sent >= due) {
        LockSupport.parkNanos(100_000);
        continue;
      }
      for (; sent < due; sent++) {
        long micros = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
        if (firstMicros < 0) {
          firstMicros = micros;
        }
        String value =
            json
                ? "{\"schema\":" + SCHEMA + ",\"payload\":{\"id\":" + sent + ",\"produced_us\":"
                    + micros + "}}"
                : String.format("%016d %09d", micros, sent);
        producer.send(
            new ProducerRecord<>(topic, Long.toString(sent), value),
            (md, e) -> {
              if (e != null) {
                failed.incrementAndGet();
              }
            });
      }
    }
    return new long[] {sent, firstMicros};
  }
}
