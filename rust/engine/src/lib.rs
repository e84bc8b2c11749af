//! sharesink-engine: a KIP-932 share-group member speaking the Kafka protocol itself.
//! It knows nothing of JNI or Kafka Connect.

pub mod bootstrap;
pub mod connection;
mod error;
mod probe;
pub mod protocol;

pub use error::{EngineError, ErrorKind};
pub use probe::{probe, ApiVersionRange, ProbeReport};

/// The engine's version; the JNI layer reports it so Java can check it against the jar.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
