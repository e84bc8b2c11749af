//! The exports, called inside a real JVM (jni's `invocation` feature): a result reaches Java, an
//! error or a panic arrives as `io.sharesink.engine.NativeException` with a stable kind, and the
//! JVM lives on. The two exception classes are compiled from the Java sources with `javac`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use jni::objects::{JClass, JObject, JObjectArray, JString, JValue};
use jni::{jni_sig, jni_str, Env, EnvUnowned, InitArgsBuilder, JNIVersion, JavaVM};
use sharesink_jni::thrown_kind_names;
use sharesink_jni::{
    Java_io_sharesink_engine_NativeEngine_allocatedBytes as allocated_bytes,
    Java_io_sharesink_engine_NativeEngine_create as create,
    Java_io_sharesink_engine_NativeEngine_layoutSelfTest as layout_self_test,
    Java_io_sharesink_engine_NativeEngine_nativeVersion as native_version,
    Java_io_sharesink_engine_NativeEngine_panicForTest as panic_for_test,
    Java_io_sharesink_engine_NativeEngine_poll as poll,
    Java_io_sharesink_engine_NativeEngine_probe as probe,
    Java_io_sharesink_engine_NativeEngine_subscribe as subscribe,
};

type TestResult = Result<(), jni::errors::Error>;

fn javac() -> PathBuf {
    std::env::var_os("JAVA_HOME")
        .map(|home| PathBuf::from(home).join("bin/javac"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("javac"))
}

/// Compiles EngineException and NativeException (they depend on the JDK only).
fn exception_classes() -> PathBuf {
    let sources =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../java/src/main/java/io/sharesink/engine");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sharesink-jni-test-classes");
    let status = Command::new(javac())
        .arg("-d")
        .arg(&out)
        .arg(sources.join("EngineException.java"))
        .arg(sources.join("NativeException.java"))
        .status()
        .expect("javac runs (JDK 17 expected; set JAVA_HOME)");
    assert!(status.success(), "javac failed");
    out
}

fn jvm() -> &'static JavaVM {
    static JVM: OnceLock<JavaVM> = OnceLock::new();
    JVM.get_or_init(|| {
        let classes = exception_classes();
        let args = InitArgsBuilder::new()
            .version(JNIVersion::V1_8)
            .option(format!("-Djava.class.path={}", classes.display()))
            .build()
            .expect("JVM init args");
        let vm = JavaVM::new(args).expect("a JVM starts");
        // The library is linked into this test binary, so no System.load runs its JNI_OnLoad.
        // SAFETY: a valid VM pointer, as System.load would pass it.
        let version = unsafe { sharesink_jni::JNI_OnLoad(vm.get_raw(), std::ptr::null_mut()) };
        assert_eq!(version, jni::sys::JNI_VERSION_1_8);
        vm
    })
}

/// Calls an export as the JVM would: with this thread's env and the (unused) class argument.
fn unowned<'local>(env: &Env<'local>) -> EnvUnowned<'local> {
    // SAFETY: the pointer is this attached thread's JNIEnv, valid for the whole callback.
    unsafe { EnvUnowned::from_raw(env.get_raw()) }
}

struct Thrown {
    kind: String,
    message: String,
    retriable: bool,
}

/// Takes the pending exception, checks it is a NativeException and reads it.
fn take_native_exception(env: &mut Env<'_>) -> Result<Thrown, jni::errors::Error> {
    let thrown = env.exception_occurred().expect("an exception is pending");
    env.exception_clear();
    let class = env.find_class(jni_str!("io/sharesink/engine/NativeException"))?;
    assert!(
        env.is_instance_of(&thrown, &class)?,
        "not a NativeException"
    );
    let kind = env
        .call_method(
            &thrown,
            jni_str!("kind"),
            jni_sig!(() -> io.sharesink.engine.EngineException::Kind),
            &[],
        )?
        .l()?;
    let kind = env
        .call_method(
            &kind,
            jni_str!("name"),
            jni_sig!(() -> java.lang.String),
            &[],
        )?
        .l()?;
    let message = env
        .call_method(
            &thrown,
            jni_str!("getMessage"),
            jni_sig!(() -> java.lang.String),
            &[],
        )?
        .l()?;
    let retriable = env
        .call_method(
            &thrown,
            jni_str!("retriable"),
            jni_sig!(() -> jboolean),
            &[],
        )?
        .z()?;
    Ok(Thrown {
        kind: env.cast_local::<JString>(kind)?.try_to_string(env)?,
        message: env.cast_local::<JString>(message)?.try_to_string(env)?,
        retriable,
    })
}

#[test]
fn native_version_is_the_crate_version() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let version = native_version(unowned(env), JClass::null());
            assert!(!env.exception_check());
            assert_eq!(version.try_to_string(env)?, env!("CARGO_PKG_VERSION"));
            Ok(())
        })
        .unwrap();
}

#[test]
fn allocated_bytes_follow_the_librarys_allocations() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let before = allocated_bytes(unowned(env), JClass::null());
            // This test binary allocates through the library's global allocator, as the
            // library's own code does inside a worker.
            let held = vec![1u8; 64 << 20];
            let during = allocated_bytes(unowned(env), JClass::null());
            assert!(!env.exception_check());
            assert!(before > 0, "{before}");
            assert!(during - before >= 60 << 20, "{before} -> {during}");
            drop(held);
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_panic_is_a_panic_exception_not_an_abort() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let message = env.new_string("deliberate test panic")?;
            panic_for_test(unowned(env), JClass::null(), message);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "PANIC");
            assert!(!thrown.retriable);
            assert!(
                thrown.message.contains("deliberate test panic"),
                "{}",
                thrown.message
            );
            assert!(
                thrown.message.contains("Rust panic at "),
                "{}",
                thrown.message
            );
            // The library and the JVM keep working.
            let version = native_version(unowned(env), JClass::null());
            assert_eq!(version.try_to_string(env)?, env!("CARGO_PKG_VERSION"));
            Ok(())
        })
        .unwrap();
}

#[test]
fn engine_errors_keep_their_kind_and_retriability() {
    let closed_port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let refused = env.new_string(format!("127.0.0.1:{closed_port}"))?;
            let answer = probe(unowned(env), JClass::null(), refused, 2_000);
            assert!(answer.is_null());
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONNECTION", "{}", thrown.message);
            assert!(thrown.retriable);

            let no_port = env.new_string("localhost")?;
            probe(unowned(env), JClass::null(), no_port, 1_000);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONFIG", "{}", thrown.message);
            assert!(!thrown.retriable);

            probe(unowned(env), JClass::null(), JString::null(), 1_000);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONFIG");
            assert!(
                thrown.message.contains("bootstrapServers"),
                "{}",
                thrown.message
            );
            Ok(())
        })
        .unwrap();
}

/// A create blob (see NativeEngine.create): properties, then topics.
fn config_blob(props: &[(&str, &str)], topics: &[&str]) -> Vec<u8> {
    sharesink_jni::encode_config_blob(props, topics)
}

#[test]
fn consumer_exports_refuse_bad_input_with_config_errors() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let blob = env.byte_array_from_slice(&config_blob(
                &[("bootstrap.servers", "127.0.0.1:9")],
                &["t"],
            ))?;
            let handle = create(unowned(env), JClass::null(), blob);
            assert_eq!(handle, 0);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONFIG");
            assert!(thrown.message.contains("group.id"), "{}", thrown.message);

            let truncated = env.byte_array_from_slice(&[1, 0, 0])?;
            create(unowned(env), JClass::null(), truncated);
            assert_eq!(take_native_exception(env)?.kind, "CONFIG");

            let mut memory = vec![0u8; 64];
            // SAFETY: `memory` outlives the buffer's use in this test.
            let buffer = unsafe { env.new_direct_byte_buffer(memory.as_mut_ptr(), memory.len())? };
            poll(unowned(env), JClass::null(), 0, buffer, 10);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONFIG");
            assert!(thrown.message.contains("handle"), "{}", thrown.message);

            let topics = env.byte_array_from_slice(&sharesink_jni::encode_topics_blob(&["t"]))?;
            subscribe(unowned(env), JClass::null(), 0, topics);
            let thrown = take_native_exception(env)?;
            assert_eq!(thrown.kind, "CONFIG");
            assert!(thrown.message.contains("handle"), "{}", thrown.message);
            Ok(())
        })
        .unwrap();
}

#[test]
fn the_layout_self_test_writes_into_a_direct_buffer() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let mut memory = vec![0u8; 8192];
            // SAFETY: `memory` outlives the buffer's use in this test.
            let buffer = unsafe { env.new_direct_byte_buffer(memory.as_mut_ptr(), memory.len())? };
            let written = layout_self_test(unowned(env), JClass::null(), buffer);
            assert!(!env.exception_check());
            assert_eq!(written, 5);
            assert_eq!(i32::from_le_bytes(memory[0..4].try_into().unwrap()), 2);
            assert_eq!(i32::from_le_bytes(memory[4..8].try_into().unwrap()), 5);

            let mut small = vec![0u8; 40];
            // SAFETY: as above.
            let buffer = unsafe { env.new_direct_byte_buffer(small.as_mut_ptr(), small.len())? };
            let needed = layout_self_test(unowned(env), JClass::null(), buffer);
            assert!(needed < -40, "asks for more than 40 bytes: {needed}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn every_native_error_kind_is_a_java_kind_and_back() {
    jvm()
        .attach_current_thread(|env| -> TestResult {
            let native = thrown_kind_names();
            // Each name the library throws comes out of NativeException as that Java kind.
            let class = env.find_class(jni_str!("io/sharesink/engine/NativeException"))?;
            for name in &native {
                let kind = JObject::from(env.new_string(name)?);
                let message = JObject::from(env.new_string("m")?);
                let exception = env.new_object(
                    &class,
                    jni_sig!((kind: JString, message: JString, retriable: jboolean) -> void),
                    &[
                        JValue::Object(&kind),
                        JValue::Object(&message),
                        JValue::Bool(false),
                    ],
                )?;
                let java_kind = env
                    .call_method(
                        &exception,
                        jni_str!("kind"),
                        jni_sig!(() -> io.sharesink.engine.EngineException::Kind),
                        &[],
                    )?
                    .l()?;
                let java_name = env
                    .call_method(
                        &java_kind,
                        jni_str!("name"),
                        jni_sig!(() -> java.lang.String),
                        &[],
                    )?
                    .l()?;
                let java_name = env.cast_local::<JString>(java_name)?.try_to_string(env)?;
                assert_eq!(&java_name, name, "Java has no kind {name}");
            }
            // And every Java kind is one the library can throw.
            let kind_class =
                env.find_class(jni_str!("io/sharesink/engine/EngineException$Kind"))?;
            let values = env
                .call_static_method(
                    &kind_class,
                    jni_str!("values"),
                    jni_sig!(() -> [io.sharesink.engine.EngineException::Kind]),
                    &[],
                )?
                .l()?;
            let values = env.cast_local::<JObjectArray>(values)?;
            let count = values.len(env)?;
            for i in 0..count {
                let value = values.get_element(env, i)?;
                let name = env
                    .call_method(
                        &value,
                        jni_str!("name"),
                        jni_sig!(() -> java.lang.String),
                        &[],
                    )?
                    .l()?;
                let name = env.cast_local::<JString>(name)?.try_to_string(env)?;
                assert!(
                    native.contains(&name.as_str()),
                    "Java kind {name} is never thrown by the native library"
                );
            }
            Ok(())
        })
        .unwrap();
}
