package io.sharesink.connect.sink;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * A map from offsets to values, iterated in ascending offset order: what {@link AckLedger} keeps
 * per partition. A partition's records are acquired mostly in ascending order and acknowledged
 * mostly from the lowest, so the map is two parallel arrays sorted by offset: an append at the high
 * end and a removal at the low end are constant time, a lookup is a binary search over primitive
 * longs, and iteration is a scan of adjacent memory. A {@link java.util.TreeMap} of boxed offsets
 * did the same with a node allocation, a rebalance and boxed comparisons per record, about a fifth
 * of a Connect task thread's CPU with a fast sink.
 *
 * <p>Removal leaves a hole (a null value) where the offset was; holes are skipped by iteration and
 * squeezed out by the next insertion once they outnumber the values, so iterators stay valid across
 * removals (their own and others'). An insertion below the highest offset (a redelivered record)
 * shifts the values above it: rare, and bounded by what one member holds of a partition. Not
 * thread-safe (the ledger's monitor guards it); insertions must not happen while an iterator is in
 * use.
 */
final class OffsetMap<V> {

  private static final int INITIAL_CAPACITY = 16;

  private long[] offsets = new long[INITIAL_CAPACITY];
  private Object[] values = new Object[INITIAL_CAPACITY];

  /** Slots in use are [start, end): values and holes, offsets ascending. */
  private int start;

  private int end;

  /** Values held (slots in use minus holes). */
  private int size;

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  V get(long offset) {
    int at = Arrays.binarySearch(offsets, start, end, offset);
    return at >= 0 ? value(at) : null;
  }

  /** Adds {@code value} under {@code offset} unless a value is there; returns that one, or null. */
  V putIfAbsent(long offset, V value) {
    if (value == null) {
      throw new NullPointerException("value");
    }
    if (end == start || offset > offsets[end - 1]) {
      makeRoomAtEnd();
      offsets[end] = offset;
      values[end++] = value;
      size++;
      return null;
    }
    int at = Arrays.binarySearch(offsets, start, end, offset);
    if (at >= 0) {
      V present = value(at);
      if (present == null) {
        values[at] = value;
        size++;
      }
      return present;
    }
    insert(-at - 1, offset, value);
    return null;
  }

  /** Removes the value under {@code offset}; returns it, or null when there was none. */
  V remove(long offset) {
    int at = Arrays.binarySearch(offsets, start, end, offset);
    if (at < 0 || values[at] == null) {
      return null;
    }
    V removed = value(at);
    clear(at);
    return removed;
  }

  /** The values in ascending offset order; the iterator's remove works. */
  Iterable<V> values() {
    return () -> new Values(start, Long.MAX_VALUE);
  }

  /** The values under offsets below {@code toExclusive}, ascending. */
  Iterable<V> below(long toExclusive) {
    return () -> new Values(start, toExclusive);
  }

  /** The values under offsets in [{@code from}, {@code to}], ascending. */
  Iterable<V> between(long from, long to) {
    return () -> {
      int at = Arrays.binarySearch(offsets, start, end, from);
      return new Values(at >= 0 ? at : -at - 1, to == Long.MAX_VALUE ? to : to + 1);
    };
  }

  @SuppressWarnings("unchecked")
  private V value(int at) {
    return (V) values[at];
  }

  private void clear(int at) {
    values[at] = null;
    size--;
    // Holes at either end leave the slots in use, so appends and searches skip them.
    while (start < end && values[start] == null) {
      start++;
    }
    while (end > start && values[end - 1] == null) {
      end--;
    }
    if (start == end) {
      start = 0;
      end = 0;
    }
  }

  private void makeRoomAtEnd() {
    if (end < offsets.length) {
      return;
    }
    if (size <= offsets.length / 2 && end - start == size) {
      moveDown(start); // no hole between the values: two block copies (the usual case)
    } else if (size <= offsets.length / 2) {
      squeeze(); // at least half the array is holes or unused before start
    } else {
      grow();
    }
  }

  private void insert(int at, long offset, V value) {
    if (end - start > 2 * size + INITIAL_CAPACITY) {
      squeeze(); // too many holes: squeeze them out, then find the slot again
      at = -Arrays.binarySearch(offsets, start, end, offset) - 1;
    }
    if (end == offsets.length) {
      int shift = start;
      if (shift > 0) {
        moveDown(shift);
        at -= shift;
      } else {
        grow();
      }
    }
    System.arraycopy(offsets, at, offsets, at + 1, end - at);
    System.arraycopy(values, at, values, at + 1, end - at);
    offsets[at] = offset;
    values[at] = value;
    end++;
    size++;
  }

  /** Moves the slots in use down to index 0, keeping holes. */
  private void moveDown(int by) {
    System.arraycopy(offsets, start, offsets, start - by, end - start);
    System.arraycopy(values, start, values, start - by, end - start);
    Arrays.fill(values, end - by, end, null);
    start -= by;
    end -= by;
  }

  /** Moves the values down to index 0, dropping every hole. */
  private void squeeze() {
    int to = 0;
    for (int from = start; from < end; from++) {
      if (values[from] != null) {
        offsets[to] = offsets[from];
        values[to++] = values[from];
      }
    }
    Arrays.fill(values, to, end, null);
    start = 0;
    end = to;
  }

  private void grow() {
    int capacity = offsets.length * 2;
    offsets = Arrays.copyOf(offsets, capacity);
    values = Arrays.copyOf(values, capacity);
  }

  /** Values of slots from {@code from} up to offsets below {@code limit}, skipping holes. */
  private final class Values implements Iterator<V> {
    private final long limit;
    private int next;
    private int last = -1;

    Values(int from, long limit) {
      this.limit = limit;
      this.next = from;
      skipHoles();
    }

    private void skipHoles() {
      next = Math.max(next, start);
      while (next < end && values[next] == null) {
        next++;
      }
    }

    @Override
    public boolean hasNext() {
      skipHoles(); // a removal elsewhere may have cleared it meanwhile
      return next < end && offsets[next] < limit;
    }

    @Override
    public V next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      last = next++;
      return value(last);
    }

    @Override
    public void remove() {
      if (last < 0 || values[last] == null) {
        throw new IllegalStateException();
      }
      clear(last);
      last = -1;
    }
  }
}
