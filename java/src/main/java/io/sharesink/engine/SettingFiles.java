package io.sharesink.engine;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Files a client setting names (trust and key stores, PEM files, keytabs, OAuth files), read only
 * when they are regular files of at most {@link #MAX_BYTES}: the path is chosen by whoever writes a
 * connector's config, and {@code /dev/zero}, a FIFO or a 3 GiB sparse file must fail naming the
 * setting, never block a task's start (opening a FIFO for reading waits for a writer) or fill the
 * worker's memory. The Java twin of the engine's {@code rust/engine/src/setting_files.rs}.
 *
 * <p>The path's type and size are asked before it is opened (stat); then at most {@code MAX_BYTES +
 * 1} bytes are read, whatever size it claimed (files of /proc report 0). Java opens files without
 * {@code O_NONBLOCK}, so a path swapped for a FIFO between the stat and the open would still block:
 * the engine, which can, checks the open file itself.
 */
public final class SettingFiles {

  /** Far above any real store (a few KiB; a bundle of every public CA is ~250 KiB). */
  public static final long MAX_BYTES = 16L * 1024 * 1024;

  private static final int S_IFMT = 0170000;

  private SettingFiles() {}

  /** A file refused for what it is (not regular, too large); the message names the path. */
  public static final class RefusedFileException extends IOException {
    RefusedFileException(String message) {
      super(message);
    }
  }

  /**
   * The contents of {@code path}.
   *
   * @throws RefusedFileException when it is not a regular file, or holds more than {@link
   *     #MAX_BYTES}
   * @throws IOException when it cannot be read ({@link java.nio.file.NoSuchFileException} when it
   *     does not exist)
   */
  public static byte[] read(Path path) throws IOException {
    return read(path, MAX_BYTES);
  }

  static byte[] read(Path path, long limit) throws IOException {
    BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
    if (!attributes.isRegularFile()) {
      throw new RefusedFileException(
          path + " is " + kind(path, attributes) + ", not a regular file");
    }
    if (attributes.size() > limit) {
      throw tooLarge(path, attributes.size(), limit);
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) attributes.size());
    byte[] chunk = new byte[8192];
    try (InputStream in = Files.newInputStream(path)) {
      int n;
      while ((n = in.read(chunk)) >= 0) {
        out.write(chunk, 0, n);
        if (out.size() > limit) {
          throw tooLarge(path, out.size(), limit);
        }
      }
    }
    return out.toByteArray();
  }

  private static RefusedFileException tooLarge(Path path, long size, long limit) {
    return new RefusedFileException(
        path
            + " holds more than "
            + limit
            + " bytes (at least "
            + size
            + "); no store is that large");
  }

  /** What a path that is not a regular file is, in words. */
  private static String kind(Path path, BasicFileAttributes attributes) {
    if (attributes.isDirectory()) {
      return "a directory";
    }
    try {
      int mode = (Integer) Files.getAttribute(path, "unix:mode");
      switch (mode & S_IFMT) {
        case 0010000:
          return "a FIFO";
        case 0020000:
          return "a character device";
        case 0060000:
          return "a block device";
        case 0140000:
          return "a socket";
        default:
          break;
      }
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      // no unix view: say less
    }
    return "a special file";
  }
}
