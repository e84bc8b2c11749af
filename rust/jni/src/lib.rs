//! sharesink-jni: the only crate that depends on `jni`. It knows nothing of Kafka Connect.
//!
//! Every `native` method lives in the Java class `io.sharesink.engine.NativeEngine`; each export
//! below is a thin shim of the form
//! `env.with_env(|env| intern_x(env, ...)).resolve::<ThrowNative>()`: `with_env` catches panics,
//! and [`ThrowNative`] turns every error or panic into a Java `NativeException(kind, message,
//! retriable)`. Nothing here may unwind into the JVM or abort it.

mod error;
mod panic_hook;
mod runtime;

use std::time::Duration;

use jni::objects::{JClass, JString};
use jni::sys::{jint, jlong, JNI_VERSION_1_8};
use jni::{Env, EnvUnowned, JavaVM};

pub use error::{Error, ThrowNative};

/// Records the VM and installs the panic hook; nothing else happens at load time (runtime and
/// logging come from explicit calls), so loading the library can never fail half-way.
///
/// # Safety
/// Called by the JVM with a valid `JavaVM` pointer.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn JNI_OnLoad(
    vm: *mut jni::sys::JavaVM,
    _reserved: *mut std::ffi::c_void,
) -> jint {
    if !vm.is_null() {
        // SAFETY: the JVM hands us its own, valid VM pointer.
        let _ = unsafe { JavaVM::from_raw(vm) };
    }
    panic_hook::install();
    JNI_VERSION_1_8
}

/// `static native String nativeVersion()`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_nativeVersion<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> JString<'local> {
    env.with_env(intern_native_version).resolve::<ThrowNative>()
}

/// `static native String probe(String bootstrapServers, long timeoutMs)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_probe<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    bootstrap_servers: JString<'local>,
    timeout_ms: jlong,
) -> JString<'local> {
    env.with_env(|env| intern_probe(env, &bootstrap_servers, timeout_ms))
        .resolve::<ThrowNative>()
}

/// `static native void panicForTest(String message)`: proves that a panic reaches Java as an
/// exception. Cheap enough to ship; the Java side keeps it package-private.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_panicForTest<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    message: JString<'local>,
) {
    env.with_env(|env| intern_panic_for_test(env, &message))
        .resolve::<ThrowNative>()
}

fn intern_native_version<'local>(env: &mut Env<'local>) -> Result<JString<'local>, Error> {
    Ok(env.new_string(sharesink_engine::VERSION)?)
}

fn intern_probe<'local>(
    env: &mut Env<'local>,
    bootstrap_servers: &JString<'local>,
    timeout_ms: jlong,
) -> Result<JString<'local>, Error> {
    let bootstrap = java_string(env, bootstrap_servers, "bootstrapServers")?;
    let timeout = timeout_from_millis(timeout_ms)?;
    let report = runtime::block_on(sharesink_engine::probe(&bootstrap, timeout))??;
    Ok(env.new_string(report.to_string())?)
}

fn intern_panic_for_test(env: &mut Env<'_>, message: &JString<'_>) -> Result<(), Error> {
    let message = java_string(env, message, "message")?;
    panic!("{message}");
}

fn java_string(env: &Env<'_>, value: &JString<'_>, name: &str) -> Result<String, Error> {
    if value.is_null() {
        return Err(Error::InvalidArgument(format!("{name} must not be null")));
    }
    Ok(value.try_to_string(env)?)
}

fn timeout_from_millis(timeout_ms: jlong) -> Result<Duration, Error> {
    u64::try_from(timeout_ms)
        .map(Duration::from_millis)
        .map_err(|_| Error::InvalidArgument(format!("timeoutMs must be >= 0, got {timeout_ms}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_timeouts_are_rejected() {
        assert_eq!(
            timeout_from_millis(1500).unwrap(),
            Duration::from_millis(1500)
        );
        let err = timeout_from_millis(-1).unwrap_err();
        assert_eq!(err.kind_name(), "CONFIG");
        assert!(err.to_string().contains("timeoutMs"));
    }

    #[test]
    fn engine_and_library_versions_agree() {
        // The Java loader checks the engine's version against the jar; the workspace gives both
        // crates one version, and this keeps it that way.
        assert_eq!(sharesink_engine::VERSION, env!("CARGO_PKG_VERSION"));
    }
}
