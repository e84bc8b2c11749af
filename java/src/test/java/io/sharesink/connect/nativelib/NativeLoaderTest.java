package io.sharesink.connect.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.Version;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.connect.errors.ConnectException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NativeLoaderTest {

  private static final String BUILD_VERSION = System.getProperty("sharesink.test.version");

  @TempDir Path workDir;

  @Test
  void mapsSupportedPlatforms() {
    assertEquals("linux-x86_64", NativeLoader.platform("Linux", "amd64"));
    assertEquals("linux-x86_64", NativeLoader.platform("Linux", "x86_64"));
    assertEquals("linux-aarch_64", NativeLoader.platform("Linux", "aarch64"));
    assertEquals("linux-x86_64-musl", NativeLoader.platform("Linux", "amd64", true));
    assertEquals("linux-aarch_64-musl", NativeLoader.platform("Linux", "aarch64", true));
  }

  @Test
  void tellsMuslFromGlibcByTheLoaderTheProcessMaps() {
    String alpine = "7f2c0a000000-7f2c0a01c000 r--p 00000000 08:01 1234 /lib/ld-musl-x86_64.so.1\n";
    String debian =
        "7f2c0a000000-7f2c0a028000 r--p 00000000 08:01 1234 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
            + "7f2c0b000000-7f2c0b001000 r--p 00000000 08:01 99 /usr/lib/musl-notes.txt\n";
    assertTrue(NativeLoader.muslIn(alpine));
    assertFalse(NativeLoader.muslIn(debian));
    // This JVM (the build machine's, glibc) is not musl.
    assertFalse(NativeLoader.runsOnMusl());
  }

  @Test
  void rejectsUnsupportedPlatformsClearly() {
    NativeLoadException e =
        assertThrows(NativeLoadException.class, () -> NativeLoader.platform("Mac OS X", "aarch64"));
    assertTrue(e.getMessage().contains("os.name=Mac OS X, os.arch=aarch64"), e.getMessage());
    assertThrows(NativeLoadException.class, () -> NativeLoader.platform("Linux", "s390x"));
  }

  @Test
  void sharedLoaderLoadsTheBundledLibraryOfThisVersion() {
    assertEquals(BUILD_VERSION, Version.get());
    assertEquals(BUILD_VERSION, NativeLoader.ensureLoaded());
    // Idempotent: the second call answers from the state, without loading again.
    assertEquals(BUILD_VERSION, NativeLoader.ensureLoaded());
    assertTrue(NativeLoader.loadFailure().isEmpty());
  }

  @Test
  void extractsToTheWorkDirAndDeletesTheFileAfterLoading() throws IOException {
    Path nested = workDir.resolve("not-yet-created");
    NativeLoader loader = new NativeLoader(new NativeLoader.Settings(null, nested, BUILD_VERSION));
    assertEquals(BUILD_VERSION, loader.load());
    try (Stream<Path> left = Files.list(nested)) {
      assertEquals(0, left.count(), "the extracted library is deleted once loaded");
    }
  }

  @Test
  void theLibraryIsWrittenIntoADirectoryOnlyThisUserCanWriteTo() throws Exception {
    Path dir = NativeLoader.privateDirectory(workDir);
    try {
      assertEquals(workDir, dir.getParent());
      assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
      Path lib =
          NativeLoader.writeAtomically(
              new ByteArrayInputStream("library bytes".getBytes(StandardCharsets.UTF_8)),
              dir,
              NativeLoader.LIBRARY_FILE);
      assertEquals(dir.resolve(NativeLoader.LIBRARY_FILE), lib);
      assertEquals("library bytes", Files.readString(lib));
      assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(lib)));
      try (Stream<Path> files = Files.list(dir)) {
        assertEquals(List.of(lib), files.toList(), "no temporary file left beside it");
      }
      Files.delete(lib);
    } finally {
      Files.deleteIfExists(dir);
    }
  }

  @Test
  void aWorkDirOthersMayWriteToIsRefusedUnlessSticky() throws Exception {
    // Before: the library was copied straight into the work dir under a name anyone could guess
    // once it was listed, and loaded from there, whoever could write to the directory.
    Path shared = workDir.resolve("shared");
    Files.createDirectories(shared);
    Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
    NativeLoader loader = new NativeLoader(new NativeLoader.Settings(null, shared, BUILD_VERSION));
    NativeLoadException e = assertThrows(NativeLoadException.class, loader::load);
    assertTrue(e.getMessage().contains(shared.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("other users may write to it"), e.getMessage());
    try (Stream<Path> left = Files.list(shared)) {
      assertEquals(0, left.count(), "nothing left behind");
    }
    // Sticky, as /tmp: others cannot rename what this user creates there.
    Files.setAttribute(shared, "unix:mode", 01777);
    Path dir = NativeLoader.privateDirectory(shared);
    Files.delete(dir);
  }

  @Test
  void aWorkDirOfAnotherUserIsRefused() throws Exception {
    Path theirs = workDir.resolve("theirs");
    Files.createDirectories(theirs);
    // Only root may give a directory away; elsewhere there is no other user's directory to try.
    boolean given;
    try {
      Files.setAttribute(theirs, "unix:uid", 65534);
      given = (Integer) Files.getAttribute(theirs, "unix:uid") == 65534;
    } catch (IOException | SecurityException e) {
      given = false;
    }
    Assumptions.assumeTrue(given, "not running as root: cannot make another user's directory");
    NativeLoadException e =
        assertThrows(NativeLoadException.class, () -> NativeLoader.privateDirectory(theirs));
    assertTrue(e.getMessage().contains("belongs to another user"), e.getMessage());
    try (Stream<Path> left = Files.list(theirs)) {
      assertEquals(0, left.count(), "nothing left behind");
    }
  }

  @Test
  void concurrentCallersShareOneLoad() throws Exception {
    NativeLoader loader = new NativeLoader(new NativeLoader.Settings(null, workDir, BUILD_VERSION));
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<String>> answers = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        answers.add(pool.submit(loader::load));
      }
      for (Future<String> answer : answers) {
        assertEquals(BUILD_VERSION, answer.get(30, TimeUnit.SECONDS));
      }
    } finally {
      pool.shutdownNow();
    }
    try (Stream<Path> left = Files.list(workDir)) {
      assertEquals(0, left.count(), "one extraction, deleted after loading");
    }
  }

  @Test
  void versionMismatchIsAClearError() {
    NativeLoader loader = new NativeLoader(new NativeLoader.Settings(null, workDir, "0.0.0-other"));
    NativeLoadException e = assertThrows(NativeLoadException.class, loader::load);
    assertTrue(
        e.getMessage().contains("is version " + BUILD_VERSION + " but the plugin jar is version"),
        e.getMessage());
  }

  @Test
  void corruptedOverrideLibraryIsAConnectExceptionNotAnUnsatisfiedLinkError() throws IOException {
    Path garbage = workDir.resolve("libsharesink_jni.so");
    Files.write(garbage, "this is not an ELF shared object".getBytes());
    NativeLoader loader =
        new NativeLoader(new NativeLoader.Settings(garbage.toString(), workDir, BUILD_VERSION));

    ConnectException first = assertThrows(ConnectException.class, loader::load);
    assertTrue(first.getMessage().contains(garbage.toString()), first.getMessage());
    assertTrue(first.getMessage().contains("-Dsharesink.native.library"), first.getMessage());
    assertTrue(first.getCause() instanceof NativeLoadException);
    assertTrue(first.getCause().getCause() instanceof UnsatisfiedLinkError);

    // The failure is kept: a later call reports the same first failure.
    ConnectException second = assertThrows(ConnectException.class, loader::load);
    assertEquals(first.getMessage(), second.getMessage());
    assertSame(first.getCause(), second.getCause());
  }

  @Test
  void missingOverrideFileIsNamed() {
    Path missing = workDir.resolve("nowhere.so");
    NativeLoader loader =
        new NativeLoader(new NativeLoader.Settings(missing.toString(), workDir, BUILD_VERSION));
    NativeLoadException e = assertThrows(NativeLoadException.class, loader::load);
    assertTrue(e.getMessage().contains("does not name a readable library file"), e.getMessage());
  }
}
