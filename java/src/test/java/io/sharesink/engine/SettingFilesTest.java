package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SettingFilesTest {

  @TempDir Path dir;

  private static String refusal(Path path) {
    return assertThrows(SettingFiles.RefusedFileException.class, () -> SettingFiles.read(path))
        .getMessage();
  }

  @Test
  void aRegularFileWithinTheBoundIsRead() throws Exception {
    Path store = Files.writeString(dir.resolve("store.pem"), "0123456789");
    assertArrayEquals("0123456789".getBytes(StandardCharsets.UTF_8), SettingFiles.read(store));
    assertEquals(
        store + " holds more than 9 bytes (at least 10); no store is that large",
        assertThrows(SettingFiles.RefusedFileException.class, () -> SettingFiles.read(store, 9))
            .getMessage());
    assertThrows(NoSuchFileException.class, () -> SettingFiles.read(dir.resolve("missing")));
  }

  @Test
  void aFifoIsRefusedWithoutBeingOpened() throws Exception {
    try (HostileFiles.Fifo fifo =
        new HostileFiles.Fifo(dir.resolve("store.pem"), "not for you".getBytes())) {
      assertEquals(fifo.path() + " is a FIFO, not a regular file", refusal(fifo.path()));
    }
  }

  @Test
  void devZeroIsRefused() {
    assertEquals(
        "/dev/zero is a character device, not a regular file", refusal(Path.of("/dev/zero")));
  }

  @Test
  void aDirectoryIsRefused() {
    assertEquals(dir + " is a directory, not a regular file", refusal(dir));
  }

  @Test
  void aSparseFileOverTheBoundIsRefusedUnread() throws Exception {
    Path sparse = HostileFiles.sparse(dir.resolve("store.pem"), SettingFiles.MAX_BYTES + 1);
    String message = refusal(sparse);
    assertTrue(message.contains("holds more than " + SettingFiles.MAX_BYTES), message);
  }

  @Test
  void aFileWhoseSizeStatDoesNotTellIsCutAtTheBound() {
    // Files of /proc report a size of 0 and hold more.
    String message =
        assertThrows(
                SettingFiles.RefusedFileException.class,
                () -> SettingFiles.read(Path.of("/proc/self/maps"), 16))
            .getMessage();
    assertTrue(message.contains("holds more than 16 bytes"), message);
  }
}
