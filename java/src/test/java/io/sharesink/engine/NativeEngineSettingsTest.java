package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class NativeEngineSettingsTest {

  @Test
  void namesWhatTheEngineDoesNotRead() {
    Map<String, Object> settings = new LinkedHashMap<>();
    for (String read :
        List.of(
            "bootstrap.servers",
            "client.id",
            "max.poll.records",
            "fetch.max.bytes",
            "fetch.min.bytes",
            "fetch.max.wait.ms",
            "security.protocol",
            "sasl.jaas.config",
            "ssl.truststore.location",
            "share.buffer.hold.max.ms",
            "share.fetch.bytes.adaptive",
            "share.memory.max.bytes")) {
      settings.put(read, "x");
    }
    settings.put("max.partition.fetch.bytes", "1");
    settings.put("client.dns.lookup", "use_all_dns_ips");
    settings.put("ssl.enabled.protocols", "TLSv1.3");
    assertEquals(
        List.of("client.dns.lookup", "max.partition.fetch.bytes", "ssl.enabled.protocols"),
        NativeEngineSettings.unread(settings));
  }
}
