// Java side of rust/engine/tests/broker_java.rs: Kafka's own clients, driven as a child
// process and compiled at test time with javac against the harness's Kafka lib directory.
//
//   share <bootstrap> <group> <topic> <member-name> <max.poll.records> <pause-ms-per-poll>
//       A KafkaShareConsumer with explicit acknowledgement: every record is ACCEPTed and each
//       poll's acks are committed with commitSync. Prints one line per record:
//         REC <member> <topic> <partition> <offset> <delivery-count> <polled-ms> <acked-ms> <ack-error>
//       (times are wall-clock ms; a record is held from its poll until its commit). Stops and
//       closes when stdin closes, then prints "CLOSED <member>".
//   create-topic <bootstrap> <topic> <partitions> [config=value ...]
//   members <bootstrap> <group>
//       Describes the share group: prints "MEMBERS <n> <members with partitions>".
//   dump <bootstrap> <topic> <min-records> <timeout-ms>
//       Reads the topic from the beginning with a classic KafkaConsumer (no group) and prints
//         DUMP <partition> <offset> key=<k> value=<v> headers=<name>=<value>;...
//       until min-records arrived and 2 s passed without more, or the timeout passes.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class KafkaClientHelper {
    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "share" -> share(args);
            case "create-topic" -> createTopic(args);
            case "dump" -> dump(args);
            case "members" -> members(args);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    static void share(String[] args) throws Exception {
        String bootstrap = args[1], group = args[2], topic = args[3], member = args[4];
        int maxPollRecords = Integer.parseInt(args[5]);
        long pauseMs = Long.parseLong(args[6]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("client.id", member);
        props.put("share.acknowledgement.mode", "explicit");
        props.put("max.poll.records", Integer.toString(maxPollRecords));
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdinWatcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (Exception ignored) { }
            stop.set(true);
        });
        stdinWatcher.setDaemon(true);
        stdinWatcher.start();
        try (KafkaShareConsumer<byte[], byte[]> consumer =
                 new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                long polled = System.currentTimeMillis();
                List<ConsumerRecord<byte[], byte[]>> batch = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    batch.add(r);
                    consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                if (pauseMs > 0) Thread.sleep(pauseMs);
                Map<TopicIdPartition, Optional<KafkaException>> results = consumer.commitSync();
                long acked = System.currentTimeMillis();
                Map<TopicPartition, String> errors = new HashMap<>();
                results.forEach((tip, err) ->
                    errors.put(tip.topicPartition(), err.map(e -> e.getClass().getSimpleName()).orElse("none")));
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    String error = errors.getOrDefault(new TopicPartition(r.topic(), r.partition()), "none");
                    out.append("REC ").append(member).append(' ').append(r.topic()).append(' ')
                       .append(r.partition()).append(' ').append(r.offset()).append(' ')
                       .append(r.deliveryCount().map(Object::toString).orElse("-")).append(' ')
                       .append(polled).append(' ').append(acked).append(' ').append(error).append('\n');
                }
                System.out.print(out);
                System.out.flush();
            }
        }
        System.out.println("CLOSED " + member);
        System.out.flush();
    }

    static void createTopic(String[] args) throws Exception {
        Map<String, String> configs = new HashMap<>();
        for (int i = 4; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[1]))) {
            admin.createTopics(List.of(new NewTopic(args[2], Integer.parseInt(args[3]), (short) 1).configs(configs)))
                 .all().get();
        }
        System.out.println("CREATED " + args[2]);
    }

    static void members(String[] args) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[1]))) {
            ShareGroupDescription group =
                admin.describeShareGroups(List.of(args[2])).describedGroups().get(args[2]).get();
            int assigned = 0;
            for (ShareMemberDescription m : group.members()) {
                if (!m.assignment().topicPartitions().isEmpty()) assigned++;
            }
            System.out.println("MEMBERS " + group.members().size() + " " + assigned);
        }
    }

    static String text(byte[] b) {
        return b == null ? "null" : new String(b, StandardCharsets.UTF_8).replace("\n", "\\n");
    }

    static void dump(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2];
        int minRecords = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.auto.commit", "false");
        try (KafkaConsumer<byte[], byte[]> consumer =
                 new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo p : consumer.partitionsFor(topic)) {
                partitions.add(new TopicPartition(topic, p.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            int seen = 0;
            long lastRecord = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline
                   && (seen < minRecords || System.currentTimeMillis() - lastRecord < 2000)) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    seen++;
                    lastRecord = System.currentTimeMillis();
                    StringBuilder headers = new StringBuilder();
                    for (Header h : r.headers()) {
                        headers.append(h.key()).append('=').append(text(h.value())).append(';');
                    }
                    System.out.println("DUMP " + r.partition() + " " + r.offset() + " key=" + text(r.key())
                        + " value=" + text(r.value()) + " headers=" + headers);
                }
            }
        }
        System.out.flush();
    }
}
