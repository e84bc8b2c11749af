package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class PollBufferTest {

  @Test
  void growsForAHugeRecordAndShrinksBackOnceBatchesFitAgain() {
    PollBuffer buffer = new PollBuffer(1_024);
    assertEquals(1_024, buffer.forPoll().capacity());
    ByteBuffer grown = buffer.grow(5_000);
    assertEquals(8_192, grown.capacity(), "doubled until it fits");
    buffer.written(5_000);
    for (int i = 0; i < PollBuffer.SHRINK_AFTER - 1; i++) {
      assertSame(grown, buffer.forPoll());
      buffer.written(900);
    }
    buffer.written(2_000); // one more batch that needed the room: the count starts again
    for (int i = 0; i < PollBuffer.SHRINK_AFTER; i++) {
      assertSame(grown, buffer.forPoll());
      buffer.written(900);
    }
    ByteBuffer shrunk = buffer.forPoll();
    assertNotSame(grown, shrunk);
    assertEquals(1_024, shrunk.capacity(), "back to the base size");
    buffer.release();
  }
}
