package io.sharesink.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Paths a hostile connector config may name, for the tests of every reader of settings' files. */
public final class HostileFiles {

  private HostileFiles() {}

  /**
   * A FIFO whose writer waits to hand it {@code content}: read the plain way (open, read), it would
   * deliver {@code content}, so a reader that opens FIFOs passes for one that works instead of
   * hanging the test. Close releases the writer whether or not anything read.
   */
  public static final class Fifo implements AutoCloseable {
    private final Path path;
    private final Thread writer;

    public Fifo(Path path, byte[] content) throws Exception {
      this.path = path;
      Process mkfifo = new ProcessBuilder("mkfifo", path.toString()).inheritIO().start();
      if (!mkfifo.waitFor(60, TimeUnit.SECONDS)) {
        mkfifo.destroyForcibly();
      }
      assertEquals(0, mkfifo.exitValue(), "mkfifo " + path);
      writer =
          new Thread(
              () -> {
                // Blocks until a reader opens the FIFO: the reader under test, or close()'s.
                try (OutputStream out = Files.newOutputStream(path)) {
                  out.write(content);
                } catch (IOException e) {
                  // the reader went away: nothing to hand over
                }
              },
              "fifo-writer");
      writer.setDaemon(true);
      writer.start();
    }

    public Path path() {
      return path;
    }

    @Override
    public void close() throws Exception {
      // Opened read-write, a FIFO never blocks and counts as a reader: a writer still waiting goes
      // on (its content fits the pipe), and one that is done is not waited for.
      try (RandomAccessFile both = new RandomAccessFile(path.toFile(), "rw")) {
        writer.join();
      }
    }
  }

  /** A sparse file of {@code size} bytes (no disk used). */
  public static Path sparse(Path path, long size) throws IOException {
    try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
      file.setLength(size);
    }
    return path;
  }
}
