package io.sharesink.connect.admin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;

/**
 * Issue 14's log flood: during an outage every admin client of a connector logged {@code
 * Rebootstrapping} every 100 ms under one shared client id. Each client gets an id of its own and
 * backs off to seconds.
 */
class ShareGroupAdminClientIdTest {

  @Test
  void everyAdminClientHasItsOwnId() {
    String a = ShareGroupAdmin.uniqueClientId("connector-share-admin-orders");
    String b = ShareGroupAdmin.uniqueClientId("connector-share-admin-orders");
    assertNotEquals(a, b);
    assertTrue(a.startsWith("connector-share-admin-orders-"), a);
  }

  @Test
  void anUnreachableClusterIsRetriedInSecondsNotMilliseconds() {
    Map<String, Object> backoff = ShareGroupAdmin.BACKOFF_DEFAULTS;
    assertEquals(10_000L, backoff.get(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG));
    assertEquals(10_000L, backoff.get(AdminClientConfig.RETRY_BACKOFF_MAX_MS_CONFIG));
    assertTrue((Long) backoff.get(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG) >= 500L);
    assertTrue(ShareGroupAdmin.CLOSE_TIMEOUT.compareTo(Duration.ofSeconds(2)) <= 0);
  }
}
