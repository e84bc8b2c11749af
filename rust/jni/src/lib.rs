//! sharesink-jni: the only crate that depends on `jni`. It knows nothing of Kafka Connect.
