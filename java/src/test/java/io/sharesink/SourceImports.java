package io.sharesink;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The imports of the production sources. The layering rules read them beside the class files
 * because javac copies a constant's value into the class that uses it: an import made only for a
 * constant (a key name, say) leaves no trace in the bytecode ArchUnit reads.
 */
record SourceImports(List<Import> imports) {

  /** {@code from} (a top-level class) imports {@code target} (a class, nested or not). */
  record Import(String fromPackage, String fromClass, String targetPackage, String targetClass) {
    @Override
    public String toString() {
      return fromPackage + "." + fromClass + " imports " + targetPackage + "." + targetClass;
    }
  }

  private static final Pattern PACKAGE = Pattern.compile("(?m)^package\\s+([\\w.]+)\\s*;");
  private static final Pattern IMPORT =
      Pattern.compile("(?m)^import\\s+(?:static\\s+)?([\\w.]+?)(?:\\.\\*)?\\s*;");

  static SourceImports read(Path root) {
    List<Import> imports = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path file : files.filter(p -> p.toString().endsWith(".java")).toList()) {
        String text = Files.readString(file);
        Matcher pkg = PACKAGE.matcher(text);
        String fromPackage = pkg.find() ? pkg.group(1) : "";
        String fromClass = file.getFileName().toString().replace(".java", "");
        Matcher m = IMPORT.matcher(text);
        while (m.find()) {
          String[] parts = m.group(1).split("\\.");
          int i = 0;
          while (i < parts.length && !Character.isUpperCase(parts[i].charAt(0))) {
            i++;
          }
          String targetPackage = String.join(".", List.of(parts).subList(0, i));
          String targetClass = i < parts.length ? parts[i] : "*";
          imports.add(new Import(fromPackage, fromClass, targetPackage, targetClass));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new SourceImports(imports);
  }
}
