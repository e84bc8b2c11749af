package io.sharesink;

import static com.tngtech.archunit.base.DescribedPredicate.describe;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.methods;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.library.dependencies.SliceAssignment;
import com.tngtech.archunit.library.dependencies.SliceIdentifier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Predicate;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The layering of the Java side, checked on the production classes (DEVELOPING.md, "Layering,
 * checked by tests"): the adapter speaks no Kafka wire protocol (the engine does), the engine
 * bindings know nothing of Connect, the JNI boundary stays in the engine bindings, and the connect
 * packages have no cycles.
 */
class LayeringTest {

  private static final String CONNECT = "io.sharesink.connect";

  /**
   * Kafka's own wire protocol: message schemas, requests and responses, error codes, record batches
   * and the clients' internals. The engine (Rust) is the one that speaks it.
   */
  private static final String[] WIRE_PROTOCOL = {
    "org.apache.kafka.common.protocol..",
    "org.apache.kafka.common.requests..",
    "org.apache.kafka.common.message..",
    "org.apache.kafka.common.network..",
    "org.apache.kafka.common.record..",
    "org.apache.kafka.common.compress..",
    "org.apache.kafka.clients.consumer.internals..",
    "org.apache.kafka.clients.producer.internals..",
    "org.apache.kafka.clients.admin.internals..",
  };

  private static JavaClasses production;
  private static SourceImports sources;

  @BeforeAll
  static void importProductionClasses() {
    production =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.sharesink");
    sources = SourceImports.read(Path.of("src", "main", "java"));
  }

  /**
   * Two uses are allowed, each narrow: {@code record.TimestampType} is a value of Connect's public
   * record API (a {@code SinkRecord} constructor takes it), not a wire format; and the engine on
   * Kafka's Java share consumer ({@code engine.kafka}) turns the client's exceptions into the error
   * codes {@code AckResult} carries (the native engine reports the broker's codes), for which
   * {@code protocol.Errors} is the client's only public map.
   */
  @Test
  void theAdapterSpeaksNoWireProtocol() {
    noClasses()
        .that()
        .resideInAPackage("io.sharesink..")
        .and()
        .resideOutsideOfPackage("io.sharesink.engine.kafka")
        .should()
        .dependOnClassesThat(wireProtocolBut(TIMESTAMP_TYPE))
        .because("the engine speaks Kafka's protocol; the adapter speaks Connect's API")
        .check(production);
    noClasses()
        .that()
        .resideInAPackage("io.sharesink.engine.kafka")
        .should()
        .dependOnClassesThat(wireProtocolBut(TIMESTAMP_TYPE, ERRORS))
        .because("the Java engine maps its client's exceptions to error codes, nothing more")
        .check(production);
    assertNoImports(
        i ->
            i.fromPackage().startsWith("io.sharesink")
                && isWireProtocol(i.targetPackage())
                && !(i.targetPackage() + "." + i.targetClass()).equals(TIMESTAMP_TYPE)
                && !(i.fromPackage().equals("io.sharesink.engine.kafka")
                    && (i.targetPackage() + "." + i.targetClass()).equals(ERRORS)),
        "Kafka's wire protocol imported outside the engine");
  }

  private static boolean isWireProtocol(String pkg) {
    for (String pattern : WIRE_PROTOCOL) {
      String prefix = pattern.substring(0, pattern.length() - 2);
      if (pkg.equals(prefix) || pkg.startsWith(prefix + ".")) {
        return true;
      }
    }
    return false;
  }

  private static void assertNoImports(Predicate<SourceImports.Import> wrong, String what) {
    List<SourceImports.Import> found = sources.imports().stream().filter(wrong).toList();
    assertTrue(found.isEmpty(), what + ": " + found);
  }

  private static final String TIMESTAMP_TYPE = "org.apache.kafka.common.record.TimestampType";
  private static final String ERRORS = "org.apache.kafka.common.protocol.Errors";

  private static DescribedPredicate<JavaClass> wireProtocolBut(String... allowed) {
    Set<String> exceptions = Set.of(allowed);
    return resideInAnyPackage(WIRE_PROTOCOL)
        .and(describe("not " + exceptions, c -> !exceptions.contains(c.getName())))
        .as("are Kafka's wire protocol (but " + String.join(", ", allowed) + ")");
  }

  @Test
  void theEngineBindingsKnowNothingOfConnect() {
    noClasses()
        .that()
        .resideInAPackage("io.sharesink.engine..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("org.apache.kafka.connect..", CONNECT + "..")
        .because("the engine bindings serve any caller; Connect is the adapter's business")
        .check(production);
    assertNoImports(
        i ->
            i.fromPackage().startsWith("io.sharesink.engine")
                && (i.targetPackage().startsWith("org.apache.kafka.connect")
                    || i.targetPackage().startsWith(CONNECT)),
        "Connect imported by the engine bindings");
  }

  @Test
  void onlyTheEngineBindingsCrossIntoNativeCode() {
    methods()
        .that()
        .haveModifier(JavaModifier.NATIVE)
        .should()
        .beDeclaredInClassesThat()
        .resideInAPackage("io.sharesink.engine")
        .because("the JNI boundary is one package, matched by the sharesink-jni crate's exports")
        .check(production);
  }

  /**
   * Each subpackage of {@code io.sharesink.connect} is one slice. The root package is not one unit:
   * it holds the plugin's entry points (connector, task) beside the configuration definer ({@code
   * ShareSinkConfig}, {@code ShareModeForm}) that subpackages read their keys from, so each of its
   * classes is a slice of its own, and what its classes use of each other is left out. A cycle is
   * then a subpackage that comes back, directly or through others, to a class that uses it (as
   * {@code ShareSinkConfig} and {@code ordering.ShareOrdering} once did).
   */
  @Test
  void theConnectPackagesHaveNoCycles() {
    SliceAssignment packages =
        new SliceAssignment() {
          @Override
          public SliceIdentifier getIdentifierOf(JavaClass javaClass) {
            String pkg = javaClass.getPackageName();
            if (pkg.equals(CONNECT)) {
              return SliceIdentifier.of(javaClass.getName().replaceAll("\\$.*", ""));
            }
            if (pkg.startsWith(CONNECT + ".")) {
              return SliceIdentifier.of(pkg);
            }
            return SliceIdentifier.ignore();
          }

          @Override
          public String getDescription() {
            return "connect's subpackages and root classes";
          }
        };
    slices()
        .assignedFrom(packages)
        .should()
        .beFreeOfCycles()
        .ignoreDependency(resideInAPackage(CONNECT), resideInAPackage(CONNECT))
        .check(production);

    // The same on the sources' imports (which see constants too).
    Map<String, Set<String>> edges = new TreeMap<>();
    for (SourceImports.Import i : sources.imports()) {
      String from = slice(i.fromPackage(), i.fromClass());
      String to = slice(i.targetPackage(), i.targetClass());
      boolean withinRoot = i.fromPackage().equals(CONNECT) && i.targetPackage().equals(CONNECT);
      if (from != null && to != null && !from.equals(to) && !withinRoot) {
        edges.computeIfAbsent(from, k -> new TreeSet<>()).add(to);
      }
    }
    for (String start : edges.keySet()) {
      List<String> cycle = pathBack(start, start, edges, new HashSet<>());
      assertTrue(cycle == null, "import cycle: " + start + " -> " + cycle);
    }
  }

  /** The slice of a top-level class: its package, or in the root package the class itself. */
  private static String slice(String pkg, String topLevelClass) {
    if (pkg.equals(CONNECT)) {
      return pkg + "." + topLevelClass;
    }
    return pkg.startsWith(CONNECT + ".") ? pkg : null;
  }

  /** A path of edges from {@code from} back to {@code goal}, or null. */
  private static List<String> pathBack(
      String from, String goal, Map<String, Set<String>> edges, Set<String> seen) {
    for (String next : edges.getOrDefault(from, Set.of())) {
      if (next.equals(goal)) {
        return new ArrayList<>(List.of(next));
      }
      if (seen.add(next)) {
        List<String> rest = pathBack(next, goal, edges, seen);
        if (rest != null) {
          rest.add(0, next);
          return rest;
        }
      }
    }
    return null;
  }
}
