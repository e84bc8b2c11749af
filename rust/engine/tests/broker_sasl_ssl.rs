//! Tests against a broker's SASL_SSL listener (TLS + SCRAM), as the harness starts it with
//! `cluster.py up --sasl-ssl`.
//!
//! Built only with `--features broker-tests`; needs `SHARESINK_SASL_SSL_BOOTSTRAP` and
//! `SHARESINK_CLIENT_PROPERTIES` (a Kafka client properties file with `security.protocol`,
//! `sasl.*` and `ssl.truststore.*`, e.g. the harness's `<cluster dir>/tls/client-sasl-ssl.properties`)
//! and FAILS when either is missing:
//!
//! ```sh
//! SHARESINK_PORT_BASE=42000 SHARESINK_CLUSTER_DIR=/tmp/engine-dev python3 tests/harness/cluster.py up --sasl-ssl
//! SHARESINK_SASL_SSL_BOOTSTRAP=127.0.0.1:42094 \
//! SHARESINK_CLIENT_PROPERTIES=/tmp/engine-dev/tls/client-sasl-ssl.properties \
//!   cargo test -p sharesink-engine --features broker-tests --test broker_sasl_ssl
//! ```

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;
use sharesink_engine::{probe_with, AckKind, ConsumerConfig, ErrorKind, Security, ShareConsumer};
use sharesink_testkit::{Admin, ProduceRecord};

const TIMEOUT: Duration = Duration::from_secs(30);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: see the top of rust/engine/tests/broker_sasl_ssl.rs")
    })
}

/// The client properties file as a map (simple `key=value` lines).
fn client_properties() -> HashMap<String, String> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let path = env("SHARESINK_CLIENT_PROPERTIES");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let mut props: HashMap<String, String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    props.insert(
        "bootstrap.servers".into(),
        env("SHARESINK_SASL_SSL_BOOTSTRAP"),
    );
    props
}

fn security(props: &HashMap<String, String>) -> Security {
    Security::from_properties(props).expect("security settings")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_over_tls_with_pkcs12_and_pem_truststores() {
    let props = client_properties();
    let bootstrap = props["bootstrap.servers"].clone();
    for mechanism in ["SCRAM-SHA-512", "SCRAM-SHA-256"] {
        let mut p = props.clone();
        p.insert("sasl.mechanism".into(), mechanism.into());
        let report = probe_with(&bootstrap, &security(&p), TIMEOUT)
            .await
            .expect(mechanism);
        println!("{mechanism}: {report}");
    }
    // The same CA as PEM, next to the PKCS12 truststore in the harness layout.
    let store = std::path::Path::new(&props["ssl.truststore.location"]);
    let pem = store.with_file_name("ca.pem");
    if pem.exists() {
        let mut p = props.clone();
        p.insert("ssl.truststore.type".into(), "PEM".into());
        p.insert("ssl.truststore.location".into(), pem.display().to_string());
        p.remove("ssl.truststore.password");
        probe_with(&bootstrap, &security(&p), TIMEOUT)
            .await
            .expect("PEM truststore");
        // Inline, as the Java side passes translated truststores.
        p.remove("ssl.truststore.location");
        p.insert(
            "ssl.truststore.certificates".into(),
            std::fs::read_to_string(&pem).unwrap(),
        );
        probe_with(&bootstrap, &security(&p), TIMEOUT)
            .await
            .expect("inline PEM certificates");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_a_fatal_authentication_error() {
    let mut props = client_properties();
    let jaas = props["sasl.jaas.config"].clone();
    let start = jaas.find("password=\"").expect("password in jaas") + "password=\"".len();
    let end = start + jaas[start..].find('"').unwrap();
    props.insert(
        "sasl.jaas.config".into(),
        format!("{}wrong{}", &jaas[..start], &jaas[end..]),
    );
    let started = Instant::now();
    let e = probe_with(&props["bootstrap.servers"], &security(&props), TIMEOUT)
        .await
        .unwrap_err();
    println!("wrong password -> {e} (after {:?})", started.elapsed());
    assert_eq!(e.kind(), ErrorKind::Authentication);
    assert!(!e.is_retriable());
    let config = ConsumerConfig::from_properties(&{
        let mut p = props.clone();
        p.insert("group.id".into(), "never-joins".into());
        p
    })
    .unwrap();
    let e = ShareConsumer::start(config, vec!["t".into()])
        .await
        .err()
        .expect("start must fail");
    assert_eq!(e.kind(), ErrorKind::Authentication);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_broker_certificate_is_refused() {
    let mut props = client_properties();
    // Trust only the system CAs, which do not include the harness's own CA.
    props.remove("ssl.truststore.location");
    props.remove("ssl.truststore.type");
    props.remove("ssl.truststore.password");
    match Security::from_properties(&props) {
        Err(e) => println!("no system CAs here: {e}"),
        Ok(sec) => {
            let e = probe_with(&props["bootstrap.servers"], &sec, TIMEOUT)
                .await
                .unwrap_err();
            println!("untrusted certificate -> {e}");
            assert_eq!(e.kind(), ErrorKind::Authentication);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_over_sasl_ssl() {
    let props = client_properties();
    let bootstrap = props["bootstrap.servers"].clone();
    let admin = Admin::connect_with(&bootstrap, security(&props), TIMEOUT)
        .await
        .expect("admin");
    let topic = format!("tls-{}", uuid::Uuid::new_v4().simple());
    let group = format!("{topic}-g");
    admin.create_topic(&topic, 2).await.unwrap();
    admin
        .set_group_config(&group, &[("share.auto.offset.reset", "earliest")])
        .await
        .unwrap();
    for p in 0..2 {
        let records: Vec<ProduceRecord> = (0..100)
            .map(|i| ProduceRecord::value(Bytes::from(format!("{p}-{i}"))))
            .collect();
        admin
            .produce(&topic, p, &records, Compression::Lz4)
            .await
            .unwrap();
    }
    let mut p = props.clone();
    p.insert("group.id".into(), group);
    let c = ShareConsumer::start(ConsumerConfig::from_properties(&p).unwrap(), vec![topic])
        .await
        .unwrap();
    let mut n = 0;
    let deadline = Instant::now() + TIMEOUT;
    while n < 200 && Instant::now() < deadline {
        if let Some(batch) = c.poll(Duration::from_millis(500)).await.unwrap() {
            n += batch.len();
            let results = c
                .acknowledge_sync(&batch.acks(AckKind::Accept), TIMEOUT)
                .await
                .unwrap();
            assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
        }
    }
    assert_eq!(n, 200);
    c.close().await.unwrap();
}
