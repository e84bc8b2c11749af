//! sharesink-engine: a KIP-932 share-group member speaking the Kafka protocol itself.
//! It knows nothing of JNI or Kafka Connect.

/// The engine's version; the JNI layer reports it so Java can check it against the jar.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
