//! The one error type of the JNI layer and the one policy that turns errors and panics into a
//! Java `io.sharesink.engine.NativeException(String kind, String message, boolean retriable)`.

use std::any::Any;

use jni::errors::ErrorPolicy;
use jni::objects::{JObject, JThrowable, JValue};
use jni::{jni_sig, jni_str, Env};
use sharesink_engine::EngineError;

use crate::panic_hook;

/// Kind names shared with the Java `EngineException.Kind` enum. The engine's kinds come from
/// `sharesink_engine::ErrorKind::name`; these are the ones only this layer produces.
const KIND_CONFIG: &str = "CONFIG";
const KIND_INTERNAL: &str = "INTERNAL";
const KIND_PANIC: &str = "PANIC";

/// Every kind name a `NativeException` thrown by this library can carry: the engine's kinds and
/// this layer's own. A JVM test checks each against Java's `EngineException.Kind`, and back.
pub fn thrown_kind_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = sharesink_engine::ErrorKind::ALL
        .iter()
        .map(|kind| kind.name())
        .collect();
    for own in [KIND_CONFIG, KIND_INTERNAL, KIND_PANIC] {
        if !names.contains(&own) {
            names.push(own);
        }
    }
    names
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Engine(#[from] EngineError),

    /// A JNI call failed; a Java exception may already be pending.
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),

    /// Java passed an argument the native side cannot use.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// The native side itself is broken (e.g. the runtime could not start).
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// The stable kind name Java maps to an exception type.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Error::Engine(e) => e.kind().name(),
            Error::InvalidArgument(_) => KIND_CONFIG,
            Error::Jni(_) | Error::Internal(_) => KIND_INTERNAL,
        }
    }

    pub fn is_retriable(&self) -> bool {
        match self {
            Error::Engine(e) => e.is_retriable(),
            _ => false,
        }
    }
}

/// Throws `NativeException` for an error or a panic and returns the default value, unless a Java
/// exception is already pending (that one wins: it carries the better story).
pub struct ThrowNative;

impl<T: Default> ErrorPolicy<T, Error> for ThrowNative {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut Self::Captures<'unowned_env_local, 'native_method>,
        err: Error,
    ) -> jni::errors::Result<T> {
        if !env.exception_check() {
            throw_native_exception(env, err.kind_name(), &err.to_string(), err.is_retriable())?;
        }
        Ok(T::default())
    }

    fn on_panic<'unowned_env_local: 'native_method, 'native_method>(
        env: &mut Env<'unowned_env_local>,
        _captures: &mut Self::Captures<'unowned_env_local, 'native_method>,
        payload: Box<dyn Any + Send + 'static>,
    ) -> jni::errors::Result<T> {
        let message =
            panic_hook::take_last_report().unwrap_or_else(|| panic_hook::message(&*payload));
        // Dropping a payload can itself panic; leaking it is the safer choice.
        std::mem::forget(payload);
        if !env.exception_check() {
            throw_native_exception(env, KIND_PANIC, &message, false)?;
        }
        Ok(T::default())
    }
}

fn throw_native_exception(
    env: &mut Env<'_>,
    kind: &str,
    message: &str,
    retriable: bool,
) -> jni::errors::Result<()> {
    // FindClass, not load_class: we are inside a native method of NativeEngine, so FindClass
    // searches NativeEngine's own (plugin) class loader. The thread's context loader may be
    // another plugin's while a legacy sink runs, and must not pick the exception class.
    let class = env.find_class(jni_str!("io/sharesink/engine/NativeException"))?;
    let kind = JObject::from(env.new_string(kind)?);
    let message = JObject::from(env.new_string(message)?);
    let exception = env.new_object(
        &class,
        jni_sig!((kind: JString, message: JString, retriable: jboolean) -> void),
        &[
            JValue::Object(&kind),
            JValue::Object(&message),
            JValue::Bool(retriable),
        ],
    )?;
    let exception = env.cast_local::<JThrowable>(exception)?;
    match env.throw(exception) {
        // `throw` reports success as "an exception is now pending".
        Err(jni::errors::Error::JavaException) | Ok(()) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn kinds_follow_the_engine() {
        let timeout = Error::from(EngineError::timeout(Duration::from_secs(1), "probe"));
        assert_eq!(timeout.kind_name(), "TIMEOUT");
        assert!(timeout.is_retriable());
        let config = Error::from(EngineError::config("bootstrap.servers", "empty"));
        assert_eq!(config.kind_name(), "CONFIG");
        assert!(!config.is_retriable());
        assert_eq!(Error::Internal("x".into()).kind_name(), "INTERNAL");
    }
}
