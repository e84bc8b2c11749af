package io.sharesink.connect.sink;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NavigableMap;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class OffsetMapTest {

  private static <V> List<V> list(Iterable<V> values) {
    List<V> out = new ArrayList<>();
    values.forEach(out::add);
    return out;
  }

  private static void assertSame(NavigableMap<Long, String> expected, OffsetMap<String> map) {
    assertEquals(expected.size(), map.size());
    assertEquals(new ArrayList<>(expected.values()), list(map.values()));
  }

  @Test
  void appendsLooksUpAndIteratesInOffsetOrder() {
    OffsetMap<String> map = new OffsetMap<>();
    for (long o = 10; o < 60; o++) {
      assertNull(map.putIfAbsent(o, "v" + o));
    }
    assertEquals("v20", map.putIfAbsent(20, "other"), "an offset held keeps its value");
    assertEquals("v20", map.get(20));
    assertNull(map.get(9));
    assertNull(map.get(60));
    assertEquals(List.of("v10", "v11"), list(map.below(12)));
    assertEquals(List.of("v58", "v59"), list(map.between(58, 1_000)));
    assertEquals(List.of("v30", "v31", "v32"), list(map.between(30, 32)));
  }

  @Test
  void aRedeliveredLowerOffsetGoesInPlaceAndHolesAreSkipped() {
    OffsetMap<String> map = new OffsetMap<>();
    for (long o : new long[] {5, 7, 9}) {
      map.putIfAbsent(o, "v" + o);
    }
    map.putIfAbsent(6, "v6");
    map.putIfAbsent(1, "v1");
    assertEquals(List.of("v1", "v5", "v6", "v7", "v9"), list(map.values()));
    assertEquals("v6", map.remove(6));
    assertNull(map.remove(6));
    assertEquals(List.of("v1", "v5", "v7", "v9"), list(map.values()));
    assertNull(map.putIfAbsent(6, "again"), "a hole takes its offset back");
    assertEquals(List.of("v5", "again", "v7"), list(map.between(2, 8)));
  }

  @Test
  void anIteratorRemovesAndSurvivesRemovalsElsewhere() {
    OffsetMap<String> map = new OffsetMap<>();
    for (long o = 0; o < 10; o++) {
      map.putIfAbsent(o, "v" + o);
    }
    Iterator<String> it = map.values().iterator();
    assertEquals("v0", it.next());
    it.remove();
    assertThrows(IllegalStateException.class, it::remove);
    map.remove(1); // ahead of the iterator
    map.remove(9); // the last one
    assertEquals("v2", it.next());
    List<String> rest = new ArrayList<>();
    it.forEachRemaining(rest::add);
    assertEquals(List.of("v3", "v4", "v5", "v6", "v7", "v8"), rest);
    assertEquals(7, map.size());
  }

  /** Random operations, shaped like a ledger's, against a TreeMap doing the same. */
  @Test
  void behavesLikeATreeMapUnderRandomOperations() {
    for (long seed = 0; seed < 200; seed++) {
      Random random = new Random(seed);
      TreeMap<Long, String> expected = new TreeMap<>();
      OffsetMap<String> map = new OffsetMap<>();
      long high = 0;
      for (int step = 0; step < 2_000; step++) {
        int op = random.nextInt(100);
        if (op < 40) { // acquire the next records
          for (int n = random.nextInt(20); n > 0; n--) {
            String v = "a" + step + "/" + n;
            assertEquals(expected.putIfAbsent(high, v), map.putIfAbsent(high, v));
            high += 1 + (random.nextInt(10) == 0 ? random.nextInt(5) : 0);
          }
        } else if (op < 50) { // a redelivery below
          long o = high == 0 ? 0 : random.nextLong(high);
          String v = "r" + step;
          assertEquals(expected.putIfAbsent(o, v), map.putIfAbsent(o, v));
        } else if (op < 70 && !expected.isEmpty()) { // accept a prefix
          long to = expected.firstKey() + random.nextInt(30);
          Iterator<String> it = map.below(to).iterator();
          Iterator<String> ex = expected.headMap(to, false).values().iterator();
          while (ex.hasNext()) {
            assertEquals(ex.next(), it.next());
            if (random.nextInt(4) != 0) {
              ex.remove();
              it.remove();
            }
          }
          assertEquals(false, it.hasNext());
        } else if (op < 80) { // one record, anywhere
          long o = high == 0 ? 0 : random.nextLong(high + 1);
          assertEquals(expected.remove(o), map.remove(o));
        } else if (op < 90) { // a range
          long from = high == 0 ? 0 : random.nextLong(high + 1);
          long to = from + random.nextInt(50);
          assertEquals(
              new ArrayList<>(expected.subMap(from, true, to, true).values()),
              list(map.between(from, to)));
        } else { // forget matching records while iterating everything
          Iterator<String> it = map.values().iterator();
          Iterator<String> ex = expected.values().iterator();
          while (ex.hasNext()) {
            String v = ex.next();
            assertEquals(v, it.next());
            if (v.hashCode() % 7 == 0) {
              ex.remove();
              it.remove();
            }
          }
        }
        long probe = high == 0 ? 0 : random.nextLong(high + 1);
        assertEquals(expected.get(probe), map.get(probe));
        assertEquals(expected.size(), map.size());
      }
      assertSame(expected, map);
    }
  }
}
