//! Settings from users (through JNI) and SASL messages from the server: security and consumer
//! settings of any value, damaged PEM and PKCS12 files, SCRAM server messages.

use proptest::prelude::*;

use super::{apply, mutation, Mutation};

fn test_data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

/// `text` with byte mutations applied, as a string (invalid UTF-8 replaced).
fn mutated_text(text: &[u8], mutations: &[Mutation]) -> String {
    let mut bytes = text.to_vec();
    apply(&mut bytes, mutations);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Blank settings fall back to defaults (a blank truststore: the system's CAs, slow to load);
/// keep every generated value non-blank.
fn non_blank(value: String) -> String {
    if value.trim().is_empty() {
        format!("x{value}")
    } else {
        value
    }
}

fn settings(pairs: Vec<(&str, String)>) -> std::collections::HashMap<String, String> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// Security settings must end in a value or a `Config` error: never a panic.
fn security_from(props: &std::collections::HashMap<String, String>) {
    if let Err(e) = crate::Security::from_properties(props) {
        assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
    }
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ =\"\\\\;a-z]{0,40}",
        proptest::collection::vec(any::<u8>(), 0..80)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

proptest! {
    #![proptest_config(super::config(1))]

    /// `sasl.jaas.config`: arbitrary text and mutations of a valid line.
    #[test]
    fn jaas_config_arbitrary_and_mutated(
        text in any_text(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let valid = br#"org.apache.kafka.common.security.scram.ScramLoginModule required username="al\"ice" password="s3cr=t;";"#;
        for jaas in [text.clone(), mutated_text(valid, &mutations)] {
            let props = settings(vec![
                ("security.protocol", "SASL_PLAINTEXT".into()),
                ("sasl.mechanism", "SCRAM-SHA-512".into()),
                ("sasl.jaas.config", jaas),
            ]);
            security_from(&props);
        }
    }

    /// PEM truststore and client certificate/key settings: arbitrary text and mutations of
    /// valid PEM (base64 damage reaches the DER parsers behind it).
    #[test]
    fn pem_settings_arbitrary_and_mutated(
        text in any_text(),
        which in 0usize..3,
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let cert = test_data("client-cert.pem");
        let key = test_data("client-key.pk8.pem");
        let valid_cert = String::from_utf8(cert.clone()).unwrap();
        let valid_key = String::from_utf8(key.clone()).unwrap();
        let damaged = [
            non_blank(mutated_text(&cert, &mutations)),
            non_blank(mutated_text(&key, &mutations)),
            non_blank(text),
        ];
        for value in damaged {
            let mut values = [valid_cert.clone(), valid_cert.clone(), valid_key.clone()];
            values[which] = value;
            let [trust, chain, key] = values;
            let props = settings(vec![
                ("security.protocol", "SSL".into()),
                ("ssl.truststore.type", "PEM".into()),
                ("ssl.truststore.certificates", trust),
                ("ssl.keystore.type", "PEM".into()),
                ("ssl.keystore.certificate.chain", chain),
                ("ssl.keystore.key", key),
            ]);
            security_from(&props);
        }
    }

    /// Consumer settings of any value: a config or a `Config` error.
    #[test]
    fn consumer_settings_arbitrary(
        values in proptest::collection::vec(any_text(), 12),
        numbers in proptest::collection::vec(
            prop_oneof![any::<i64>().prop_map(|v| v.to_string()), Just("18446744073709551615".to_string()), Just("-0".to_string())],
            8),
    ) {
        let keys = [
            "bootstrap.servers", "group.id", "client.id", "client.rack", "share.acquire.mode",
            "security.protocol", "sasl.mechanism", "ssl.truststore.type", "ssl.keystore.type",
            "ssl.endpoint.identification.algorithm", "max.poll.records", "fetch.max.bytes",
        ];
        let numeric = [
            "max.poll.records", "fetch.max.bytes", "fetch.min.bytes", "fetch.max.wait.ms",
            "request.timeout.ms", "share.buffer.max.records", "share.buffer.max.bytes",
            "share.memory.max.bytes",
        ];
        let mut props: std::collections::HashMap<String, String> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        // Only plaintext: the other protocols are covered above and may load system CAs.
        props.insert("security.protocol".into(), "PLAINTEXT".into());
        if let Err(e) = crate::ConsumerConfig::from_properties(&props) {
            assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
        }
        props.insert("bootstrap.servers".into(), "localhost:9092".into());
        props.insert("group.id".into(), "g".into());
        props.insert("share.acquire.mode".into(), "record_limit".into());
        for (key, number) in numeric.iter().zip(numbers) {
            props.insert(key.to_string(), number);
        }
        if let Err(e) = crate::ConsumerConfig::from_properties(&props) {
            assert_eq!(e.kind(), crate::ErrorKind::Config, "{e}");
        }
    }

    /// SCRAM server-first and server-final messages: arbitrary text and near-valid messages.
    /// Valid iteration counts are rare here (PBKDF2 is slow in a debug build).
    #[test]
    fn scram_server_messages(
        text in any_text(),
        nonce_extends_ours in any::<bool>(),
        salt in prop_oneof![Just("c2FsdA==".to_string()), any_text()],
        iterations in prop_oneof![
            1 => Just("4096".to_string()),
            9 => prop_oneof![any::<i64>().prop_map(|i| i.to_string()), any_text(),
                             Just("4294967295".to_string()), Just("16385".to_string())],
        ],
        extra in any_text(),
    ) {
        use crate::sasl::{check_server_final, ScramClient, ScramHash};
        let client = ScramClient::new(&text, &extra, "nonce".into());
        let nonce = if nonce_extends_ours { "nonce+server" } else { "other" };
        let server_first = format!("r={nonce},s={salt},i={iterations}{extra}");
        for hash in [ScramHash::Sha256, ScramHash::Sha512] {
            for message in [text.as_str(), server_first.as_str()] {
                if let Err(e) = client.client_final(hash, message) {
                    assert_eq!(e.kind(), crate::ErrorKind::Authentication, "{e}");
                }
            }
        }
        for message in [&text, &server_first, &extra] {
            assert!(check_server_final(message, b"signature", "b:1").is_err());
        }
    }
}

proptest! {
    // Each case opens a PKCS12 archive (key derivation included): fewer cases.
    #![proptest_config(super::config(5))]

    /// A damaged PKCS12 keystore or truststore file is a `Config` error, never a panic.
    #[test]
    fn pkcs12_files_mutated(mutations in proptest::collection::vec(mutation(), 1..4)) {
        let mut archive = test_data("client.p12");
        apply(&mut archive, &mutations);
        let path = std::env::temp_dir().join(format!(
            "sharesink-fuzz-{}-{:?}.p12",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&path, &archive).unwrap();
        let location = path.to_str().unwrap().to_string();
        for (kind, location_key, password_key) in [
            ("ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password"),
            ("ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password"),
        ] {
            let mut props = settings(vec![
                ("security.protocol", "SSL".into()),
                (kind, "PKCS12".into()),
                (location_key, location.clone()),
                (password_key, "secret".into()),
            ]);
            if kind == "ssl.keystore.type" {
                props.insert("ssl.truststore.type".into(), "PEM".into());
                props.insert(
                    "ssl.truststore.certificates".into(),
                    String::from_utf8(test_data("client-cert.pem")).unwrap(),
                );
            }
            security_from(&props);
        }
        let _ = std::fs::remove_file(&path);
    }
}
