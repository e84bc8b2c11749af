//! sharesink-testkit: what the engine's broker tests (`rust/engine/tests`) and the bench
//! (`sharesink-bench`, `scripts/bench.sh`) need besides the engine: create and delete topics, set
//! group configs, read share-partition start offsets, produce records (plain or in a
//! transaction, or a batch already encoded: [`hostile`] writes record batches no honest producer
//! writes), and send a raw request. Never shipped: the engine does not depend on it, the
//! JNI library does not link it.
//!
//! It talks to the broker through the engine's public `Connection` (TLS and SASL as the engine
//! does them), encodes requests with kafka-protocol, and decodes the responses of the admin
//! requests with kafka-protocol as it is ([`raw::request`]). The engine checks the shape of every
//! response before kafka-protocol decodes it (`protocol::response_schema`: the crate sizes arrays
//! from unchecked counts, and a failed allocation aborts the process); that matters inside a
//! Connect worker talking to any broker. This crate only talks to the brokers the tests and the
//! bench start, so it does without, and the engine carries no schemas for requests it never
//! sends. Metadata and FindCoordinator, which the engine sends too, still go through
//! `Connection::request` and its check.

mod admin;
pub mod hostile;
mod lookup;
mod produce;
pub mod raw;

pub use admin::Admin;
pub use hostile::BombCodec;
pub use produce::ProduceRecord;
