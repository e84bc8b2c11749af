package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class BootstrapServersTest {

  /** Knows exactly these hosts, and records what it was asked. */
  private static final class FakeDns implements BootstrapServers.HostResolver {
    final Set<String> known;
    final List<String> asked = new ArrayList<>();

    FakeDns(String... known) {
      this.known = Set.of(known);
    }

    @Override
    public void resolve(String host) throws UnknownHostException {
      asked.add(host);
      if (!known.contains(host)) {
        throw new UnknownHostException(host);
      }
    }
  }

  private static Optional<String> problem(String value) {
    return BootstrapServers.problem(value, new FakeDns("a", "b.example.com", "10.0.0.1", "::1"));
  }

  @Test
  void acceptsWhatKafkasClientsAccept() {
    assertEquals(Optional.empty(), problem("a:9092"));
    assertEquals(Optional.empty(), problem(" a:9092 , b.example.com:9093,"));
    assertEquals(Optional.empty(), problem("SASL_SSL://b.example.com:9093"));
    assertEquals(Optional.empty(), problem("10.0.0.1:1,[::1]:65535,::1:9092"));
  }

  @Test
  void namesTheMalformedEntry() {
    assertProblem("a", "'a' is not host:port");
    assertProblem("a:", "'a:' is not host:port");
    assertProblem(":9092", "':9092' is not host:port");
    assertEquals(Optional.of("port 'x' is not a number from 1 to 65535"), problem("a:x"));
    assertProblem("a:1,b:x", "'b:x': port 'x' is not a number");
    assertProblem("a:0", "port '0' is not a number from 1 to 65535");
    assertProblem("a:70000", "port '70000'");
    assertProblem("a:9092;b:9092", "(separate servers with ',')");
    assertProblem("a 9092:1", "(separate servers with ',')");
    assertProblem("host:name:9092", "'host:name' is not a host name or an IPv6 address");
    assertProblem("[zz]:9092", "'zz' is not a host name or an IPv6 address");
    assertProblem(" , ", "no address given");
    assertProblem("", "no address given");
  }

  @Test
  void anUnresolvableHostIsAProblemAndTheLookupIsSkippedForAMalformedValue() {
    FakeDns dns = new FakeDns("a");
    assertEquals(
        Optional.of("hosts kafka-1, kafka-2 cannot be resolved (DNS lookup failed)"),
        BootstrapServers.problem("a:9092,kafka-1:9092,kafka-2:9092", dns));
    assertEquals(List.of("a", "kafka-1", "kafka-2"), dns.asked);

    FakeDns untouched = new FakeDns();
    assertTrue(BootstrapServers.problem("kafka-1", untouched).isPresent());
    assertEquals(List.of(), untouched.asked);
  }

  @Test
  void aLongListCostsAFewLookupsNotOneAHost() {
    // Validation runs in the worker's REST thread: a value naming a thousand hosts (or one host a
    // thousand times) must not hold it for a thousand DNS lookups.
    StringBuilder hosts = new StringBuilder("a:9092,a:9093");
    for (int i = 0; i < 1000; i++) {
      hosts.append(",h").append(i).append(".example.com:9092");
    }
    FakeDns dns = new FakeDns("a");
    Optional<String> problem = BootstrapServers.problem(hosts.toString(), dns);
    assertEquals(BootstrapServers.MAX_LOOKUPS, dns.asked.size());
    assertEquals("a", dns.asked.get(0));
    assertEquals(1, dns.asked.stream().filter("a"::equals).count());
    assertTrue(problem.isPresent() && problem.get().contains("h0.example.com"), problem.toString());

    // The syntax of every entry is still checked.
    assertProblem(hosts + ",x:y", "'x:y': port 'y' is not a number");
  }

  private static void assertProblem(String value, String expected) {
    Optional<String> problem = problem(value);
    assertTrue(problem.isPresent(), value + " is refused");
    assertTrue(problem.get().contains(expected), problem.get());
  }
}
