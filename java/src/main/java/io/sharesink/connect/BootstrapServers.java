package io.sharesink.connect;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Checks a {@code bootstrap.servers} value before any client is built from it: a comma-separated
 * list of {@code host:port} (an optional {@code SCHEME://} prefix, an IPv6 address with or without
 * brackets, as Kafka's clients take it), every host known to DNS. Kafka's clients would refuse the
 * same value later, from inside a task, with an error that names {@code bootstrap.servers}, not the
 * setting the operator wrote. A host that resolves but does not answer is not a problem here: the
 * cluster may be down for now.
 *
 * <p>At most {@link #MAX_LOOKUPS} distinct hosts are looked up: the check runs in the worker's REST
 * thread (validation) and a connector's start, where a classic sink connector's config costs no
 * lookup at all, and each lookup may wait seconds on DNS. The rest of a longer list is checked for
 * its syntax only; Kafka's client looks every host up when the task builds it.
 */
final class BootstrapServers {

  /** Looks a host name up; a seam for tests. */
  @FunctionalInterface
  interface HostResolver {
    void resolve(String host) throws UnknownHostException;

    HostResolver DNS = InetAddress::getAllByName;
  }

  /** A DNS name or an IPv4 address; checked before any lookup so a typo reads as one. */
  private static final Pattern HOST_NAME = Pattern.compile("[A-Za-z0-9_]([A-Za-z0-9._-]*)");

  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+(%[A-Za-z0-9._-]+)?");

  /** Distinct hosts looked up per value, at most: more than a bootstrap list needs. */
  static final int MAX_LOOKUPS = 8;

  private BootstrapServers() {}

  /** One entry of the list, split. */
  record Address(String host, int port) {}

  /**
   * What is wrong with {@code value}, in words for an operator; empty when every entry is {@code
   * host:port} and every host resolves.
   */
  static Optional<String> problem(String value, HostResolver resolver) {
    List<Address> addresses = new ArrayList<>();
    Optional<String> syntax = parse(value, addresses);
    if (syntax.isPresent()) {
      return syntax;
    }
    List<String> unknown = new ArrayList<>();
    for (String host :
        addresses.stream().map(Address::host).distinct().limit(MAX_LOOKUPS).toList()) {
      try {
        resolver.resolve(host);
      } catch (UnknownHostException | SecurityException e) {
        unknown.add(host);
      }
    }
    if (!unknown.isEmpty()) {
      return Optional.of(
          (unknown.size() == 1 ? "host " : "hosts ")
              + String.join(", ", unknown)
              + " cannot be resolved (DNS lookup failed)");
    }
    return Optional.empty();
  }

  /** Fills {@code out} with the entries of {@code value}, or says which entry is malformed. */
  static Optional<String> parse(String value, List<Address> out) {
    if (value == null || value.isBlank()) {
      return Optional.of("no address given");
    }
    for (String raw : value.split(",", -1)) {
      String entry = raw.trim();
      if (entry.isEmpty()) {
        continue; // Kafka's clients skip empty entries ("a:1,,b:2", a trailing comma) too
      }
      int scheme = entry.indexOf("://");
      String address = scheme >= 0 ? entry.substring(scheme + 3) : entry;
      int colon = address.lastIndexOf(':');
      if (colon <= 0 || colon == address.length() - 1) {
        return Optional.of("'" + entry + "' is not host:port");
      }
      // The caller shows the whole value: name the entry only when there are several.
      String where = entry.equals(value.trim()) ? "" : "'" + entry + "': ";
      String host = address.substring(0, colon);
      String port = address.substring(colon + 1);
      int portNumber = parsePort(port);
      if (portNumber < 0) {
        return Optional.of(where + "port '" + port + "' is not a number from 1 to 65535");
      }
      boolean bracketed = host.startsWith("[") && host.endsWith("]");
      if (bracketed) {
        host = host.substring(1, host.length() - 1);
      }
      // IPv6 goes in brackets, but Kafka's clients take one without too (the last ':' is the
      // port's).
      boolean ipv6 = bracketed || host.contains(":");
      if (!(ipv6 ? IPV6 : HOST_NAME).matcher(host).matches()) {
        return Optional.of(
            where
                + "'"
                + host
                + (ipv6 ? "' is not a host name or an IPv6 address" : "' is not a host name")
                + (host.matches(".*[;\\s].*") ? " (separate servers with ',')" : ""));
      }
      out.add(new Address(host, portNumber));
    }
    if (out.isEmpty()) {
      return Optional.of("no address given");
    }
    return Optional.empty();
  }

  private static int parsePort(String port) {
    if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(Character::isDigit)) {
      return -1;
    }
    int number = Integer.parseInt(port);
    return number >= 1 && number <= 65535 ? number : -1;
  }
}
