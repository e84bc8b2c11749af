package io.sharesink.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sharesink.connect.nativelib.NativeLoadException;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** share.engine=auto: native where it loads and speaks the security, else the Java client. */
class EngineChoiceTest {

  private static final Supplier<Optional<NativeLoadException>> LOADS = Optional::empty;
  private static final Supplier<Optional<NativeLoadException>> NO_LIBRARY =
      () ->
          Optional.of(
              new NativeLoadException(
                  "the sharesink plugin jar has no native/linux-riscv64/libsharesink_jni.so"));

  private static final Map<String, Object> SCRAM =
      Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", "SCRAM-SHA-512");

  @Test
  void autoRunsTheNativeEngineWhereItLoadsAndSpeaksTheSecurity() {
    EngineChoice plain = EngineChoice.choose("auto", Map.of(), LOADS);
    assertEquals(ShareSinkConfig.ENGINE_NATIVE, plain.engine());
    assertNull(plain.fallbackReason());
    assertEquals(ShareSinkConfig.ENGINE_NATIVE, EngineChoice.choose("AUTO", SCRAM, LOADS).engine());
  }

  @Test
  void autoFallsBackToJavaWhenTheLibraryDoesNotLoad() {
    EngineChoice c = EngineChoice.choose("auto", Map.of(), NO_LIBRARY);
    assertEquals(ShareSinkConfig.ENGINE_JAVA, c.engine());
    assertTrue(c.fallbackReason().contains("linux-riscv64"), c.fallbackReason());
  }

  @Test
  void autoPicksJavaForSecurityTheNativeEngineLacks() {
    for (String mechanism : new String[] {"OAUTHBEARER", "GSSAPI", "AWS_MSK_IAM"}) {
      EngineChoice c =
          EngineChoice.choose(
              "auto", Map.of("security.protocol", "SASL_SSL", "sasl.mechanism", mechanism), LOADS);
      assertEquals(ShareSinkConfig.ENGINE_JAVA, c.engine(), mechanism);
      assertTrue(c.fallbackReason().contains(mechanism), c.fallbackReason());
    }
    // No mechanism set: Kafka's default is GSSAPI.
    assertEquals(
        ShareSinkConfig.ENGINE_JAVA,
        EngineChoice.choose("auto", Map.of("security.protocol", "SASL_PLAINTEXT"), LOADS).engine());
    EngineChoice iam =
        EngineChoice.choose(
            "auto",
            Map.of(
                "security.protocol", "SASL_SSL",
                "sasl.mechanism", "PLAIN",
                "sasl.client.callback.handler.class",
                    "software.amazon.msk.auth.iam.IAMClientCallbackHandler"),
            LOADS);
    assertEquals(ShareSinkConfig.ENGINE_JAVA, iam.engine());
    assertTrue(iam.fallbackReason().contains("sasl.client.callback.handler.class"));
  }

  @Test
  void aForcedEngineIsWhatRunsWhateverElseHolds() {
    // native forced: the loader's own error stands (NativeLoader.ensureLoaded at start).
    assertEquals(
        ShareSinkConfig.ENGINE_NATIVE,
        EngineChoice.choose("native", Map.of(), NO_LIBRARY).engine());
    assertNull(EngineChoice.choose("native", Map.of(), NO_LIBRARY).fallbackReason());
    assertEquals(ShareSinkConfig.ENGINE_JAVA, EngineChoice.choose("java", SCRAM, LOADS).engine());
  }

  @Test
  void theDefaultIsAuto() {
    assertEquals(
        ShareSinkConfig.ENGINE_AUTO,
        new ShareSinkConfig(ShareSinkConfigTest.validConfig()).engine());
  }
}
