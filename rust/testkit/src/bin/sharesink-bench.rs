//! sharesink-bench: consume N records from a topic through share-group members, ACCEPT each
//! batch, and print throughput and CPU time.
//!
//! ```text
//! sharesink-bench --bootstrap HOST:PORT --topic T --records N [--group G] [--members M]
//!                 [--produce --partitions P --record-size BYTES]
//!                 [--set CONFIG=VALUE ...]     (consumer properties, e.g. max.poll.records=1000)
//!                 [--group-config KEY=VALUE ...] (group configs set before joining)
//!                 [--poll-from-thread] [--copy-records]
//! ```
//! By default each member polls in a task of the bench's own runtime. `--poll-from-thread` polls
//! from a plain thread through `Handle::block_on`, as the JNI library's callers do, and
//! `--copy-records` copies every key and value into a fresh vector, as the JNI bench copies them
//! into `byte[]`s: together they separate what the JNI path costs from what any consumer outside
//! the runtime that copies its records costs.
//! The group gets `share.auto.offset.reset=earliest` before the first member joins. The clock
//! starts when the first record arrives (join time is reported separately).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sharesink_engine::{AckKind, ConsumerConfig, EngineError, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

/// The allocator the JNI library uses too (see the workspace Cargo.toml), so this bench measures
/// the engine as the plugin runs it.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    bootstrap: String,
    topic: String,
    group: String,
    records: u64,
    members: usize,
    produce: bool,
    partitions: i32,
    record_size: usize,
    consumer_props: Vec<(String, String)>,
    group_configs: Vec<(String, String)>,
    poll_from_thread: bool,
    copy_records: bool,
}

fn usage(msg: &str) -> ! {
    eprintln!("{msg}\nusage: sharesink-bench --bootstrap HOST:PORT --topic T --records N [--group G] [--members M] [--produce --partitions P --record-size BYTES] [--set K=V]... [--group-config K=V]... [--poll-from-thread] [--copy-records]");
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        bootstrap: String::new(),
        topic: String::new(),
        group: format!("sharesink-bench-{}", std::process::id()),
        records: 0,
        members: 1,
        produce: false,
        partitions: 1,
        record_size: 100,
        consumer_props: Vec::new(),
        group_configs: Vec::new(),
        poll_from_thread: false,
        copy_records: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
        };
        let kv = |s: String| -> (String, String) {
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .unwrap_or_else(|| usage(&format!("`{s}` is not KEY=VALUE")))
        };
        match flag.as_str() {
            "--bootstrap" => args.bootstrap = value(),
            "--topic" => args.topic = value(),
            "--group" => args.group = value(),
            "--records" => args.records = value().parse().unwrap_or_else(|_| usage("--records")),
            "--members" => args.members = value().parse().unwrap_or_else(|_| usage("--members")),
            "--produce" => args.produce = true,
            "--partitions" => {
                args.partitions = value().parse().unwrap_or_else(|_| usage("--partitions"))
            }
            "--record-size" => {
                args.record_size = value().parse().unwrap_or_else(|_| usage("--record-size"))
            }
            "--set" => args.consumer_props.push(kv(value())),
            "--group-config" => args.group_configs.push(kv(value())),
            "--poll-from-thread" => args.poll_from_thread = true,
            "--copy-records" => args.copy_records = true,
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if args.bootstrap.is_empty() || args.topic.is_empty() || args.records == 0 {
        usage("--bootstrap, --topic and --records are required");
    }
    args
}

/// Copies every key and value out of the batch, as a caller in another runtime (the JVM) must.
fn copy_out(batch: &sharesink_engine::Batch) {
    let mut copies: Vec<Vec<u8>> = Vec::with_capacity(batch.len() * 2);
    for record in batch.records() {
        copies.push(record.key().map(<[u8]>::to_vec).unwrap_or_default());
        copies.push(record.value().map(<[u8]>::to_vec).unwrap_or_default());
    }
    std::hint::black_box(&copies);
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

async fn produce(admin: &Admin, args: &Args) -> Result<(), EngineError> {
    admin.create_topic(&args.topic, args.partitions).await?;
    let value = Bytes::from(vec![b'x'; args.record_size]);
    let chunk = 2000usize;
    let mut produced = 0u64;
    let mut partition = 0;
    while produced < args.records {
        let n = chunk.min((args.records - produced) as usize);
        let records = vec![ProduceRecord::value(value.clone()); n];
        admin
            .produce(
                &args.topic,
                partition,
                &records,
                kafka_protocol::records::Compression::None,
            )
            .await?;
        produced += n as u64;
        partition = (partition + 1) % args.partitions;
    }
    println!(
        "produced {produced} records of {} bytes to {} ({} partitions)",
        args.record_size, args.topic, args.partitions
    );
    Ok(())
}

async fn run(args: Args) -> Result<(), EngineError> {
    let admin = Admin::connect(&args.bootstrap, Duration::from_secs(30)).await?;
    if args.produce {
        produce(&admin, &args).await?;
    }
    let mut group_configs: Vec<(&str, &str)> = vec![("share.auto.offset.reset", "earliest")];
    group_configs.extend(
        args.group_configs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str())),
    );
    admin.set_group_config(&args.group, &group_configs).await?;

    let mut props: HashMap<String, String> = HashMap::new();
    props.insert("bootstrap.servers".into(), args.bootstrap.clone());
    props.insert("group.id".into(), args.group.clone());
    props.extend(args.consumer_props.iter().cloned());
    let config = ConsumerConfig::from_properties(&props)?;

    let total = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let target = args.records;
    let join_started = Instant::now();
    let first_record: Arc<std::sync::OnceLock<(Instant, f64)>> =
        Arc::new(std::sync::OnceLock::new());
    // Set by the member whose batch reaches the target, so the clock stops then and not at the
    // next tick of the progress loop below (up to 100 ms later).
    let last_record: Arc<std::sync::OnceLock<(Instant, f64)>> =
        Arc::new(std::sync::OnceLock::new());
    let mut members = Vec::new();
    for _ in 0..args.members {
        let consumer =
            Arc::new(ShareConsumer::start(config.clone(), vec![args.topic.clone()]).await?);
        let (total, bytes) = (total.clone(), bytes.clone());
        let (first_record, last_record) = (first_record.clone(), last_record.clone());
        let c = consumer.clone();
        let copy_records = args.copy_records;
        let member = async move {
            while total.load(Relaxed) < target {
                match c.poll(Duration::from_millis(200)).await? {
                    Some(batch) => {
                        if first_record.set((Instant::now(), cpu_seconds())).is_ok() {
                            // for a driver that measures other processes from this moment
                            eprintln!("first record");
                        }
                        let before = total.fetch_add(batch.len() as u64, Relaxed);
                        if before + batch.len() as u64 >= target
                            && last_record.set((Instant::now(), cpu_seconds())).is_ok()
                        {
                            eprintln!("last record");
                        }
                        bytes.fetch_add(batch.payload_bytes() as u64, Relaxed);
                        if copy_records {
                            copy_out(&batch);
                        }
                        c.acknowledge(&batch.acks(AckKind::Accept))?;
                    }
                    None => {
                        if first_record
                            .get()
                            .is_some_and(|(t, _)| t.elapsed() > Duration::from_secs(600))
                        {
                            break;
                        }
                    }
                }
            }
            Ok::<_, EngineError>(())
        };
        let task = if args.poll_from_thread {
            // A thread of our own, not one of the runtime's blocking pool: JNI's callers are
            // threads the runtime knows nothing of. spawn_blocking only waits for it to end.
            let handle = tokio::runtime::Handle::current();
            let thread = std::thread::spawn(move || handle.block_on(member));
            tokio::task::spawn_blocking(move || thread.join().expect("member thread"))
        } else {
            tokio::spawn(member)
        };
        members.push((consumer, task));
    }
    let mut last_report = Instant::now();
    let mut idle_since: Option<(u64, Instant)> = None;
    while total.load(Relaxed) < target {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = total.load(Relaxed);
        match idle_since {
            Some((m, since)) if m == n && since.elapsed() > Duration::from_secs(30) => {
                eprintln!("no progress for 30 s at {n} records; stopping");
                break;
            }
            Some((m, _)) if m == n => {}
            _ => idle_since = Some((n, Instant::now())),
        }
        if last_report.elapsed() > Duration::from_secs(5) {
            eprintln!("... {n} records");
            last_report = Instant::now();
        }
    }
    let (end, cpu_end) = last_record
        .get()
        .copied()
        .unwrap_or_else(|| (Instant::now(), cpu_seconds()));
    for (_, task) in &members {
        task.abort();
    }
    let mut metrics = Vec::new();
    for (consumer, _) in members {
        metrics.push(consumer.metrics());
        consumer.close().await?;
    }
    let n = total.load(Relaxed);
    let b = bytes.load(Relaxed);
    let Some((start, cpu_start)) = first_record.get().copied() else {
        eprintln!("no records consumed");
        std::process::exit(1);
    };
    let secs = end.duration_since(start).as_secs_f64().max(1e-9);
    let cpu = cpu_end - cpu_start;
    println!(
        "consumed {n} records ({:.1} MB) with {} member(s) in {secs:.2} s (+{:.2} s join): {:.0} records/s, {:.2} MB/s, CPU {cpu:.2} s ({:.2} CPU s per million records)",
        b as f64 / 1e6,
        args.members,
        start.duration_since(join_started).as_secs_f64(),
        n as f64 / secs,
        b as f64 / 1e6 / secs,
        cpu / (n as f64 / 1e6),
    );
    for (i, m) in metrics.iter().enumerate() {
        println!(
            "member {i}: fetches {} (avg {:.1} ms), ShareAcknowledge {} (avg {:.1} ms), accepted {}, ack errors {}, empty fetches {}",
            m.fetch_requests, m.fetch_latency_avg_ms, m.ack_requests, m.ack_latency_avg_ms, m.accepted, m.ack_errors, m.fetches_empty
        );
    }
    Ok(())
}

fn main() {
    let args = parse_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("sharesink-bench")
        .build()
        .expect("tokio runtime");
    if let Err(e) = runtime.block_on(run(args)) {
        eprintln!("sharesink-bench: {e}");
        std::process::exit(1);
    }
}
