package io.sharesink.connect.nativelib;

import io.sharesink.connect.Version;
import io.sharesink.engine.NativeEngine;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Loads {@code libsharesink_jni} once per plugin class loader.
 *
 * <p>The library is packed in the plugin jar under {@code native/<platform>/}. It is copied to a
 * uniquely named file in a work directory ({@value #WORKDIR_PROPERTY}, default {@code
 * java.io.tmpdir}), loaded with {@link System#load} from this class, so that it belongs to the
 * plugin's class loader and two plugin versions can load side by side, and the file is deleted
 * right after. The only way to use another library is the explicit {@value #LIBRARY_PROPERTY}
 * property; {@code java.library.path} is never searched, because on a shared worker it may hold
 * anything.
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
    Path extracted = null;
    try (InputStream in = NativeLoader.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new NativeLoadException(
            "the sharesink plugin jar has no "
                + resource
                + ": this build does not support "
                + platform);
      }
      Files.createDirectories(workDir);
      // A unique name per load: two plugin versions, or two workers sharing a tmp dir, never
      // overwrite each other's file, and a file is never reused after its deletion.
      extracted =
          Files.createTempFile(
              workDir, "libsharesink_jni-" + settings.expectedVersion() + "-", ".so");
      Files.copy(in, extracted, StandardCopyOption.REPLACE_EXISTING);
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
