package io.sharesink.connect.ordering;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md holds the table of known sinks generated from {@link KnownSinks}; this test
 * regenerates it and fails when the file is stale. {@code -Dsharesink.docs.update=true} rewrites it
 * instead.
 */
class OrderingReferenceTest {

  private static final Path DOC = Path.of("..", "docs", "configuration.md");

  @Test
  void theDocumentedTableIsTheOneValidationUses() throws Exception {
    if (Boolean.getBoolean("sharesink.docs.update")) {
      OrderingReference.update(DOC);
    }
    String document = Files.readString(DOC, StandardCharsets.UTF_8);
    assertEquals(
        OrderingReference.REGION.replaceIn(document, OrderingReference.markdown()),
        document,
        "docs/configuration.md is stale: run `mvn -Dnative.skip test -Dtest=OrderingReferenceTest"
            + " -Dsharesink.docs.update=true` in java/");
  }

  @Test
  void everySinkAndClassIsInTheTable() {
    String markdown = OrderingReference.markdown();
    for (KnownSinks.Sink sink : KnownSinks.SINKS) {
      assertTrue(markdown.contains("| " + sink.name() + " |"), sink.name());
      sink.classes().forEach(c -> assertTrue(markdown.contains("`" + c + "`"), c));
      sink.triggers().stream()
          .filter(t -> !t.always())
          .forEach(t -> assertTrue(markdown.contains("`" + t.key() + "` "), t.key()));
    }
  }

  @Test
  void theTableCoversAtLeastFifteenSinks() {
    assertTrue(KnownSinks.SINKS.size() >= 15, "only " + KnownSinks.SINKS.size() + " sinks");
    for (KnownSinks.Sink sink : KnownSinks.SINKS) {
      assertTrue(
          sink.kind() != KnownSinks.Kind.ORDER_SENSITIVE || !sink.triggers().isEmpty(),
          sink.name() + ": an order-sensitive sink names what makes it so");
      assertTrue(
          sink.kind() == KnownSinks.Kind.ORDER_SENSITIVE || sink.why() != null,
          sink.name() + ": says why");
    }
  }
}
