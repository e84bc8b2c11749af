package io.sharesink.connect.nativelib;

import io.sharesink.connect.Version;
import io.sharesink.engine.NativeEngine;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libsharesink_jni} once per plugin class loader.
 *
 * <p>The library is packed in the plugin jar under {@code native/<platform>/}. It is written into a
 * new directory only the worker's user can write to (0700), made for this load inside a work
 * directory ({@value #WORKDIR_PROPERTY}, default {@code java.io.tmpdir}; refused when another user
 * owns it, or others may write to it and it is not sticky as {@code /tmp} is), whole or not at all
 * (a temporary file forced to disk, then renamed), loaded with {@link System#load} from this class,
 * so that it belongs to the plugin's class loader and two plugin versions can load side by side,
 * and the file and its directory are deleted right after. The only way to use another library is
 * the explicit {@value #LIBRARY_PROPERTY} property; {@code java.library.path} is never searched,
 * because on a shared worker it may hold anything.
 *
 * <p>After loading, the native version must equal the jar's version. A failure is kept: every later
 * call throws a {@link NativeLoadException} with the same message, so {@code validate()} and {@code
 * start()} report it clearly. Nothing here runs from a static initialiser, so a broken library
 * never disturbs the worker's plugin scan.
 */
public final class NativeLoader {

  /** JVM property naming a library file to load instead of the one in the jar. */
  public static final String LIBRARY_PROPERTY = "sharesink.native.library";

  /** JVM property naming the directory the bundled library is extracted to. */
  public static final String WORKDIR_PROPERTY = "sharesink.native.workdir";

  /** The file name of the library inside {@code native/<platform>/} in the jar. */
  public static final String LIBRARY_FILE = "libsharesink_jni.so";

  private static final Logger log = LoggerFactory.getLogger(NativeLoader.class);

  private static NativeLoader shared;

  private final Settings settings;
  private String loadedVersion;
  private NativeLoadException failure;

  /**
   * Where to load from and which version to expect.
   *
   * @param overrideLibrary an explicit library file, or null to use the one in the jar
   * @param workDir where the bundled library is extracted
   * @param expectedVersion the version the native library must report
   */
  public record Settings(String overrideLibrary, Path workDir, String expectedVersion) {

    /** Settings from the JVM properties and the jar's version. */
    public static Settings fromSystemProperties() {
      String override = System.getProperty(LIBRARY_PROPERTY);
      String workDir = System.getProperty(WORKDIR_PROPERTY, System.getProperty("java.io.tmpdir"));
      return new Settings(
          override == null || override.isBlank() ? null : override.trim(),
          Path.of(workDir),
          Version.get());
    }
  }

  public NativeLoader(Settings settings) {
    this.settings = settings;
  }

  /** The loader for this plugin class loader, configured from JVM properties on first use. */
  public static synchronized NativeLoader shared() {
    if (shared == null) {
      shared = new NativeLoader(Settings.fromSystemProperties());
    }
    return shared;
  }

  /**
   * Loads the library unless already loaded; returns its version.
   *
   * @throws NativeLoadException if it cannot be loaded now or could not be earlier
   */
  public static String ensureLoaded() {
    return shared().load();
  }

  /** Loads the library unless already loaded, and returns the failure if that did not work. */
  public static Optional<NativeLoadException> loadFailure() {
    try {
      ensureLoaded();
      return Optional.empty();
    } catch (NativeLoadException e) {
      return Optional.of(e);
    }
  }

  /**
   * Loads the library on the first call; later calls return the version or rethrow the first
   * failure (wrapped, so the caller's stack shows too). Thread-safe.
   */
  public synchronized String load() {
    if (loadedVersion != null) {
      return loadedVersion;
    }
    if (failure == null) {
      try {
        loadedVersion = loadAndCheck();
        return loadedVersion;
      } catch (NativeLoadException e) {
        failure = e;
      } catch (RuntimeException | LinkageError e) {
        failure =
            new NativeLoadException("sharesink native library: unexpected load failure: " + e, e);
      }
      log.error("{}", failure.getMessage(), failure);
    }
    throw new NativeLoadException(failure.getMessage(), failure);
  }

  private String loadAndCheck() {
    String source;
    if (settings.overrideLibrary() != null) {
      source = loadOverride(Path.of(settings.overrideLibrary()));
    } else {
      source =
          extractAndLoad(
              platform(System.getProperty("os.name"), System.getProperty("os.arch"), runsOnMusl()));
    }
    String nativeVersion;
    try {
      nativeVersion = NativeEngine.nativeVersion();
    } catch (UnsatisfiedLinkError e) {
      throw new NativeLoadException(
          "sharesink native library "
              + source
              + " loaded but does not export NativeEngine.nativeVersion(): it is not a sharesink"
              + " library of this version ("
              + e.getMessage()
              + ")",
          e);
    }
    if (!settings.expectedVersion().equals(nativeVersion)) {
      throw new NativeLoadException(
          "sharesink native library "
              + source
              + " is version "
              + nativeVersion
              + " but the plugin jar is version "
              + settings.expectedVersion()
              + ": use the library built with this jar"
              + (settings.overrideLibrary() != null ? " or unset -D" + LIBRARY_PROPERTY : ""));
    }
    log.info("Loaded sharesink native library {} version {}", source, nativeVersion);
    return nativeVersion;
  }

  private String loadOverride(Path library) {
    String source = library.toAbsolutePath() + " (from -D" + LIBRARY_PROPERTY + ")";
    if (!Files.isRegularFile(library)) {
      throw new NativeLoadException(
          "-D" + LIBRARY_PROPERTY + "=" + library + " does not name a readable library file");
    }
    try {
      System.load(library.toAbsolutePath().toString());
    } catch (UnsatisfiedLinkError e) {
      throw new NativeLoadException(
          "cannot load the sharesink native library "
              + source
              + ": "
              + e.getMessage()
              + ". Point -D"
              + LIBRARY_PROPERTY
              + " at a libsharesink_jni.so built for this platform, or unset it to use the"
              + " library in the plugin jar",
          e);
    }
    return source;
  }

  private String extractAndLoad(String platform) {
    String resource = "native/" + platform + "/" + LIBRARY_FILE;
    Path workDir = settings.workDir();
    Path dir = null;
    Path extracted = null;
    try (InputStream in = NativeLoader.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new NativeLoadException(
            "the sharesink plugin jar has no "
                + resource
                + ": this build does not support "
                + platform);
      }
      // A directory of its own per load: two plugin versions, or two workers sharing a tmp dir,
      // never meet, and a file is never reused after its deletion.
      dir = privateDirectory(workDir);
      extracted = writeAtomically(in, dir, LIBRARY_FILE);
      System.load(extracted.toAbsolutePath().toString());
      return "jar:" + resource;
    } catch (IOException e) {
      throw new NativeLoadException(
          "cannot extract the sharesink native library to "
              + workDir
              + ": "
              + e
              + ". Set -D"
              + WORKDIR_PROPERTY
              + " to a writable directory",
          e);
    } catch (UnsatisfiedLinkError e) {
      throw new NativeLoadException(
          "cannot load the sharesink native library extracted to "
              + extracted
              + ": "
              + e.getMessage()
              + ". If "
              + workDir
              + " is on a filesystem mounted noexec, set -D"
              + WORKDIR_PROPERTY
              + " to a directory where libraries may be mapped executable",
          e);
    } finally {
      // Once loaded, the mapping keeps the code alive; the file is no longer needed.
      deleteQuietly(extracted);
      deleteQuietly(dir);
    }
  }

  /** Owner read, write and search only. */
  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rwx------");

  /** The sticky bit of a directory's mode: only an entry's owner may rename or delete it. */
  private static final int STICKY = 01000;

  /**
   * A new directory inside {@code workDir} that only this process's user can write to (0700), for
   * one load: what is loaded from it cannot be swapped by another user between its write and its
   * load. Refused (a {@link NativeLoadException} naming the directory) when {@code workDir} belongs
   * to another user than this one or root, or when others may write to it and it is not sticky (as
   * {@code /tmp} is): they could then rename the new directory away and put their own in its place.
   */
  static Path privateDirectory(Path workDir) throws IOException {
    Files.createDirectories(workDir);
    Path dir =
        Files.createTempDirectory(
            workDir, "sharesink-native-", PosixFilePermissions.asFileAttribute(OWNER_ONLY));
    try {
      int myUid = uid(dir);
      int workDirUid = uid(workDir);
      if (workDirUid != myUid && workDirUid != 0) {
        throw unsafe(workDir, "it belongs to another user (uid " + workDirUid + ")");
      }
      int workDirMode = mode(workDir);
      if ((workDirMode & 022) != 0 && (workDirMode & STICKY) == 0) {
        throw unsafe(
            workDir,
            "other users may write to it (mode "
                + Integer.toOctalString(workDirMode & 07777)
                + ") and it is not sticky");
      }
      int dirMode = mode(dir);
      if (uid(dir) != myUid || (dirMode & 077) != 0) {
        throw unsafe(dir, "it is not private (mode " + Integer.toOctalString(dirMode) + ")");
      }
      return dir;
    } catch (IOException | RuntimeException e) {
      deleteQuietly(dir);
      throw e;
    }
  }

  private static NativeLoadException unsafe(Path dir, String why) {
    return new NativeLoadException(
        "sharesink will not load its native library from "
            + dir.toAbsolutePath()
            + ": "
            + why
            + ", so another user could replace the library before it is loaded. Set -D"
            + WORKDIR_PROPERTY
            + " to a directory of the worker's user that others cannot write to");
  }

  private static int uid(Path path) throws IOException {
    return (Integer) Files.getAttribute(path, "unix:uid");
  }

  private static int mode(Path path) throws IOException {
    return (Integer) Files.getAttribute(path, "unix:mode");
  }

  /**
   * Writes {@code in} to {@code name} in {@code dir} whole or not at all: into a temporary file
   * (owner read and write only), forced to disk, then renamed. A crash never leaves a partial
   * library under the name that is loaded.
   */
  static Path writeAtomically(InputStream in, Path dir, String name) throws IOException {
    Path part =
        Files.createTempFile(
            dir,
            name + "-",
            ".part",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    try {
      try (FileChannel out = FileChannel.open(part, StandardOpenOption.WRITE)) {
        in.transferTo(Channels.newOutputStream(out));
        out.force(true);
      }
      Path target = dir.resolve(name);
      Files.move(part, target, StandardCopyOption.ATOMIC_MOVE);
      try (FileChannel directory = FileChannel.open(dir, StandardOpenOption.READ)) {
        directory.force(true); // the rename, on disk too
      } catch (IOException e) {
        log.debug("Could not sync directory {}: {}", dir, e.toString());
      }
      return target;
    } finally {
      deleteQuietly(part);
    }
  }

  private static void deleteQuietly(Path file) {
    if (file == null) {
      return;
    }
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      log.warn("Could not delete the extracted native library {}: {}", file, e.toString());
    }
  }

  /** As {@link #platform(String, String, boolean)} on glibc. */
  public static String platform(String osName, String osArch) {
    return platform(osName, osArch, false);
  }

  /**
   * Whether this JVM runs on musl (Alpine-based worker images): its own process maps musl's dynamic
   * loader ({@code ld-musl-<arch>.so.1}) where a glibc JVM maps {@code libc.so.6}.
   */
  public static boolean runsOnMusl() {
    try {
      return muslIn(Files.readString(Path.of("/proc/self/maps")));
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /** Whether a {@code /proc/<pid>/maps} text shows musl's loader or libc. */
  static boolean muslIn(String maps) {
    return maps.contains("/ld-musl-") || maps.contains("/libc.musl-");
  }

  /**
   * The directory name under {@code native/} for an OS, architecture (as Java names them) and libc,
   * e.g. {@code linux-x86_64} (glibc 2.17 or newer) or {@code linux-aarch_64-musl}.
   *
   * @throws NativeLoadException for a platform sharesink has no library for
   */
  public static String platform(String osName, String osArch, boolean musl) {
    String os = osName == null ? "" : osName.toLowerCase(Locale.ROOT);
    String arch = osArch == null ? "" : osArch.toLowerCase(Locale.ROOT);
    String osPart = os.startsWith("linux") ? "linux" : null;
    String archPart =
        switch (arch) {
          case "amd64", "x86_64", "x64" -> "x86_64";
          case "aarch64", "arm64" -> "aarch_64";
          default -> null;
        };
    if (osPart == null || archPart == null) {
      throw new NativeLoadException(
          "sharesink's native engine runs on Linux x86_64 and aarch64; this JVM reports os.name="
              + osName
              + ", os.arch="
              + osArch);
    }
    return osPart + "-" + archPart + (musl ? "-musl" : "");
  }
}
