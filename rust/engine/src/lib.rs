//! sharesink-engine: a KIP-932 share-group member speaking the Kafka protocol itself.
//! It knows nothing of JNI or Kafka Connect.
//!
//! Entry points: [`probe`] (what a broker offers) and [`ShareConsumer`] (a share-group member:
//! poll batches, acknowledge ranges explicitly, close).

mod acks;
mod batch;
pub mod bootstrap;
mod buffer;
mod clock;
mod cluster;
mod config;
pub mod connection;
mod consumer;
mod error;
mod fetcher;
mod fetcher_handle;
mod lifecycle;
mod membership;
mod memory;
mod metrics;
pub mod panic_report;
mod pem_key;
mod probe;
pub mod protocol;
mod record_batch;
mod records;
mod router;
mod sasl;
pub mod security;
pub mod setting_files;
mod shared;
mod sweeper;
mod tasks;

pub use acks::{Ack, AckKind, AckResult};
pub use batch::{Batch, RecordHeader, ShareRecord, TimestampType};
pub use config::ConsumerConfig;
pub use consumer::{properties, ShareConsumer};
pub use error::{EngineError, ErrorKind};
pub use memory::{MemoryPool, MEMBER_BOUND_KEY, WORKER_BOUND_PROPERTY};
pub use metrics::MetricsSnapshot;
pub use probe::{probe, probe_with, ApiVersionRange, ProbeReport};
pub use protocol::share_requests::AcquireMode;
pub use security::Security;

/// The engine's version; the JNI layer reports it so Java can check it against the jar.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod fuzz_tests;
