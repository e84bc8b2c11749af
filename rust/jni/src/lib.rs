//! sharesink-jni: the only crate that depends on `jni`. It knows nothing of Kafka Connect.
//!
//! Every `native` method lives in the Java class `io.sharesink.engine.NativeEngine`; each export
//! below is a thin shim of the form
//! `env.with_env(|env| intern_x(env, ...)).resolve::<ThrowNative>()`: `with_env` catches panics,
//! and [`ThrowNative`] turns every error or panic into a Java `NativeException(kind, message,
//! retriable)`. Nothing here may unwind into the JVM or abort it.

mod ack_layout;
mod allocator;
mod batch_layout;
mod consumer;
mod error;
mod logs;
mod metrics_layout;
mod panic_hook;
mod runtime;

use std::time::Duration;

use jni::objects::{JByteArray, JByteBuffer, JClass, JLongArray, JString};
use jni::sys::{jboolean, jint, jlong, JNI_VERSION_1_8};
use jni::{Env, EnvUnowned, JavaVM};

use crate::consumer::ConsumerHandle;

pub use consumer::{encode_config_blob, encode_topics_blob};
pub use error::{thrown_kind_names, Error, ThrowNative};

/// Rust allocations of this library (not the JVM's) go to mimalloc (the `mimalloc` feature, on by
/// default), counted (`allocator.rs`).
#[global_allocator]
static ALLOCATOR: allocator::CountingAllocator = allocator::CountingAllocator::new();

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

/// `static native void init(int workerThreads, int maxLogLevel, long memoryMaxBytes)`: runtime
/// size (for the next runtime started), the most verbose native log level wanted (0 off,
/// 1 ERROR .. 5 TRACE), and the bound on what all members' records hold together (the worker's
/// memory pool; `<= 0` keeps it); installs the log layer on first call.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_init<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    worker_threads: jint,
    max_log_level: jint,
    memory_max_bytes: jlong,
) {
    env.with_env(|_| intern_init(worker_threads, max_log_level, memory_max_bytes))
        .resolve::<ThrowNative>()
}

/// `static native long create(byte[] config)`: joins a share group; returns the handle.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_create<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    config: JByteArray<'local>,
) -> jlong {
    env.with_env(|env| intern_create(env, &config))
        .resolve::<ThrowNative>()
}

/// `static native int poll(long handle, ByteBuffer buffer, long timeoutMs)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_poll<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    buffer: JByteBuffer<'local>,
    timeout_ms: jlong,
) -> jint {
    env.with_env(|env| intern_poll(env, handle, &buffer, timeout_ms))
        .resolve::<ThrowNative>()
}

/// `static native void wakeup(long handle)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_wakeup<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| consumer(handle).map(ConsumerHandle::wakeup))
        .resolve::<ThrowNative>()
}

/// `static native void subscribe(long handle, byte[] topics)`: replaces the subscription with
/// the topics of the blob (`i32 t, t × topic`); an empty list is refused (the broker refuses a
/// member joining with none).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_subscribe<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    topics: JByteArray<'local>,
) {
    env.with_env(|env| intern_subscribe(env, handle, &topics))
        .resolve::<ThrowNative>()
}

/// `static native void acknowledge(long handle, ByteBuffer acks, int length)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_acknowledge<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    acks: JByteBuffer<'local>,
    length: jint,
) {
    env.with_env(|env| intern_acknowledge(env, handle, &acks, length))
        .resolve::<ThrowNative>()
}

/// `static native int acknowledgeSync(long handle, ByteBuffer acks, int length, long timeoutMs)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_acknowledgeSync<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    acks: JByteBuffer<'local>,
    length: jint,
    timeout_ms: jlong,
) -> jint {
    env.with_env(|env| intern_acknowledge_sync(env, handle, &acks, length, timeout_ms))
        .resolve::<ThrowNative>()
}

/// `static native void metrics(long handle, long[] out)`
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_metrics<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    out: JLongArray<'local>,
) {
    env.with_env(|env| intern_metrics(env, handle, &out))
        .resolve::<ThrowNative>()
}

/// `static native int drainLogs(long handle, ByteBuffer out)`: handle 0 drains the global queue.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_drainLogs<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
    out: JByteBuffer<'local>,
) -> jint {
    env.with_env(|env| intern_drain_logs(env, handle, &out))
        .resolve::<ThrowNative>()
}

/// `static native void close(long handle)`: closes the share sessions (releasing what was not
/// acknowledged) and leaves the group; wakes a blocked poll, which then returns -1.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_close<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| consumer(handle)?.close())
        .resolve::<ThrowNative>()
}

/// `static native void destroy(long handle)`: frees the handle. Java calls it once, after every
/// other call on the handle has returned.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_destroy<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    handle: jlong,
) {
    env.with_env(|_| intern_destroy(handle))
        .resolve::<ThrowNative>()
}

/// `static native boolean runtimeRunning()`: whether the engine runtime exists now.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_runtimeRunning<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jboolean {
    env.with_env(|_| Ok::<_, Error>(runtime::is_running()))
        .resolve::<ThrowNative>()
}

/// `static native long allocatedBytes()`: the bytes this library has allocated and not freed
/// (its own allocator, so the JVM's allocations are not in it): every consumer's buffers,
/// sessions and the runtime of this worker together.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_allocatedBytes<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
) -> jlong {
    env.with_env(|_| Ok::<_, Error>(allocator_live_bytes()))
        .resolve::<ThrowNative>()
}

fn allocator_live_bytes() -> jlong {
    jlong::try_from(ALLOCATOR.live_bytes()).unwrap_or(jlong::MAX)
}

/// `static native int layoutSelfTest(ByteBuffer out)`: writes the fixed batch of
/// `batch_layout::self_test_records` as `poll` would, so Java can check its reader against the
/// writer. Returns the record count, or minus the bytes needed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_layoutSelfTest<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    out: JByteBuffer<'local>,
) -> jint {
    env.with_env(|env| intern_layout_self_test(env, &out))
        .resolve::<ThrowNative>()
}

/// `static native int metricsLayoutSelfTest(long[] out)`: writes the fixed snapshot of
/// `metrics_layout::self_test_snapshot` as `metrics` would, so Java can check its reader against
/// the writer. Returns the number of values written.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_sharesink_engine_NativeEngine_metricsLayoutSelfTest<'local>(
    mut env: EnvUnowned<'local>,
    _class: JClass<'local>,
    out: JLongArray<'local>,
) -> jint {
    env.with_env(|env| intern_metrics_layout_self_test(env, &out))
        .resolve::<ThrowNative>()
}

fn intern_init(
    worker_threads: jint,
    max_log_level: jint,
    memory_max_bytes: jlong,
) -> Result<(), Error> {
    if worker_threads > 0 {
        runtime::set_worker_threads(worker_threads as usize);
    }
    if memory_max_bytes > 0 {
        let limit = usize::try_from(memory_max_bytes).unwrap_or(usize::MAX);
        let pool = runtime::memory_pool();
        if pool.limit() != limit {
            pool.set_limit(limit);
        }
    }
    logs::init(max_log_level.clamp(0, 5) as u8);
    Ok(())
}

fn intern_create(env: &mut Env<'_>, config: &JByteArray<'_>) -> Result<jlong, Error> {
    if config.is_null() {
        return Err(Error::InvalidArgument("config must not be null".into()));
    }
    let blob = env.convert_byte_array(config)?;
    let handle = ConsumerHandle::create(&blob)?;
    Ok(Box::into_raw(handle) as jlong)
}

fn intern_subscribe(
    env: &mut Env<'_>,
    handle: jlong,
    topics: &JByteArray<'_>,
) -> Result<(), Error> {
    let consumer = consumer(handle)?;
    if topics.is_null() {
        return Err(Error::InvalidArgument("topics must not be null".into()));
    }
    let blob = env.convert_byte_array(topics)?;
    consumer.subscribe(&blob)
}

/// The consumer behind a handle.
fn consumer(handle: jlong) -> Result<&'static ConsumerHandle, Error> {
    if handle == 0 {
        return Err(Error::InvalidArgument(
            "consumer handle is 0 (closed)".into(),
        ));
    }
    // SAFETY: a non-zero handle comes from `intern_create` and Java stops passing it before it
    // calls `destroy` (NativeShareConsumerEngine's in-flight count), so the box is alive here.
    Ok(unsafe { &*(handle as *const ConsumerHandle) })
}

/// The memory of a direct `ByteBuffer`.
fn direct_buffer<'a>(env: &Env<'_>, buffer: &JByteBuffer<'_>) -> Result<&'a mut [u8], Error> {
    if buffer.is_null() {
        return Err(Error::InvalidArgument("buffer must not be null".into()));
    }
    let address = env
        .get_direct_buffer_address(buffer)
        .map_err(|_| Error::InvalidArgument("buffer must be a direct ByteBuffer".into()))?;
    let capacity = env.get_direct_buffer_capacity(buffer)?;
    // SAFETY: a direct buffer's memory stays valid while Java holds the buffer, which it does
    // for the duration of this call; only the calling thread uses it meanwhile.
    Ok(unsafe { std::slice::from_raw_parts_mut(address, capacity) })
}

fn intern_poll(
    env: &mut Env<'_>,
    handle: jlong,
    buffer: &JByteBuffer<'_>,
    timeout_ms: jlong,
) -> Result<jint, Error> {
    let consumer = consumer(handle)?;
    let timeout = timeout_from_millis(timeout_ms)?;
    let out = direct_buffer(env, buffer)?;
    consumer.poll(out, timeout)
}

fn ack_request<'a>(
    env: &Env<'_>,
    acks: &JByteBuffer<'_>,
    length: jint,
) -> Result<(&'a mut [u8], usize), Error> {
    let buf = direct_buffer(env, acks)?;
    let length = usize::try_from(length)
        .ok()
        .filter(|l| *l <= buf.len())
        .ok_or_else(|| Error::InvalidArgument(format!("length {length} outside the buffer")))?;
    Ok((buf, length))
}

fn intern_acknowledge(
    env: &mut Env<'_>,
    handle: jlong,
    acks: &JByteBuffer<'_>,
    length: jint,
) -> Result<(), Error> {
    let consumer = consumer(handle)?;
    let (buf, length) = ack_request(env, acks, length)?;
    consumer.acknowledge(&buf[..length])
}

fn intern_acknowledge_sync(
    env: &mut Env<'_>,
    handle: jlong,
    acks: &JByteBuffer<'_>,
    length: jint,
    timeout_ms: jlong,
) -> Result<jint, Error> {
    let consumer = consumer(handle)?;
    let timeout = timeout_from_millis(timeout_ms)?;
    let (buf, length) = ack_request(env, acks, length)?;
    consumer.acknowledge_sync(buf, length, timeout)
}

fn intern_metrics(env: &mut Env<'_>, handle: jlong, out: &JLongArray<'_>) -> Result<(), Error> {
    let consumer = consumer(handle)?;
    write_metrics(env, out, &consumer.metrics())
}

/// Copies `values` into `out`, which must hold at least `metrics_layout::FIELDS` longs.
fn write_metrics(
    env: &mut Env<'_>,
    out: &JLongArray<'_>,
    values: &[i64; metrics_layout::FIELDS],
) -> Result<(), Error> {
    if out.is_null() || out.len(env)? < metrics_layout::FIELDS {
        return Err(Error::InvalidArgument(format!(
            "metrics needs a long[{}]",
            metrics_layout::FIELDS
        )));
    }
    Ok(out.set_region(env, 0, values)?)
}

fn intern_metrics_layout_self_test(env: &mut Env<'_>, out: &JLongArray<'_>) -> Result<jint, Error> {
    write_metrics(
        env,
        out,
        &metrics_layout::write(&metrics_layout::self_test_snapshot()),
    )?;
    Ok(metrics_layout::FIELDS as jint)
}

fn intern_drain_logs(
    env: &mut Env<'_>,
    handle: jlong,
    out: &JByteBuffer<'_>,
) -> Result<jint, Error> {
    let out = direct_buffer(env, out)?;
    let written = if handle == 0 {
        logs::global_queue().drain_into(out)
    } else {
        consumer(handle)?.drain_logs(out)
    };
    Ok(written as jint)
}

fn intern_destroy(handle: jlong) -> Result<(), Error> {
    if handle == 0 {
        return Ok(());
    }
    // SAFETY: see `consumer`; Java calls destroy exactly once, with no other call in flight.
    drop(unsafe { Box::from_raw(handle as *mut ConsumerHandle) });
    Ok(())
}

fn intern_layout_self_test(env: &mut Env<'_>, out: &JByteBuffer<'_>) -> Result<jint, Error> {
    let out = direct_buffer(env, out)?;
    let records = batch_layout::self_test_records();
    Ok(match batch_layout::write_batch(&records, out, 0, 0) {
        batch_layout::Written::Records { records, .. } => records as jint,
        batch_layout::Written::TooSmall { needed } => -(needed as jint),
    })
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
