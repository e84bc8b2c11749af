// Starts one member of sharesink's native (Rust, JNI) share consumer engine with the Kafka client
// settings given as key=value arguments, and prints how its start ended. Used by
// tests/e2e/test_credential_recorder.py to show that the engine sends its SASL/PLAIN password to
// whatever bootstrap.servers names (the recorder). Run with Java's source launcher:
//
//   java -cp '<sharesink-connect jar>:<kafka lib>/*' NativeEngineSaslProbe.java topic k=v ...
//
// It uses the plugin's public engine classes only: NativeLoader (the library inside the jar) and
// NativeShareConsumerEngine (what ShareSinkTask opens for share.engine=native).

import io.sharesink.connect.nativelib.NativeLoader;
import io.sharesink.engine.NativeShareConsumerEngine;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class NativeEngineSaslProbe {
  public static void main(String[] args) {
    String topic = args[0];
    Map<String, Object> settings = new LinkedHashMap<>();
    for (int i = 1; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      settings.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    System.out.println("native library " + NativeLoader.ensureLoaded());
    try (NativeShareConsumerEngine engine = new NativeShareConsumerEngine(settings, List.of(topic))) {
      System.out.println("STARTED (unexpected against the recorder)");
    } catch (RuntimeException e) {
      System.out.println("START FAILED: " + e);
    }
  }
}
