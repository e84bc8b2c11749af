//! The private key of a PEM key store, taken as Kafka 4.4's client takes it
//! (`DefaultSslEngineFactory.PemStore`), for the inline `ssl.keystore.key` and a PEM file at
//! `ssl.keystore.location` alike (Kafka reads such a file as both the key and the chain):
//!
//! - the PEM holds exactly one block whose label ends in `PRIVATE KEY` (`PRIVATE KEY`,
//!   `ENCRYPTED PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`, ...);
//! - without `ssl.key.password`, that block is an unencrypted PKCS#8 key of an RSA, DSA or EC
//!   key (Kafka's key factories): an encrypted key, a PKCS#1 (`RSA PRIVATE KEY`) or SEC1
//!   (`EC PRIVATE KEY`) key, an Ed25519 key are refused;
//! - with `ssl.key.password`, the block is an encrypted PKCS#8 key, decrypted with it. The engine
//!   decrypts nothing: it refuses such a key naming `ssl.key.password` (under `share.engine=auto`
//!   the task runs the Java client instead).
//!
//! So a key the engine takes is one Kafka's client takes, and every key without a password that
//! Kafka's client refuses, the engine refuses too.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::EngineError;

/// DER of the algorithm identifiers Kafka's key factories read (RSA, DSA, EC).
const RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const ID_DSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x38, 0x04, 0x01];
const ID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];

/// The one private key in `pem`. `setting` is the setting the PEM came from (`ssl.keystore.key`
/// or `ssl.keystore.location`); `key_password` is `ssl.key.password`.
pub(crate) fn private_key(
    pem: &str,
    key_password: Option<&str>,
    setting: &str,
) -> Result<PrivateKeyDer<'static>, EngineError> {
    let blocks = private_key_blocks(pem);
    let block = match blocks.as_slice() {
        [] => {
            return Err(EngineError::config(
                setting,
                "no private key (a PEM block `-----BEGIN PRIVATE KEY-----`) found",
            ))
        }
        [one] => one,
        more => {
            return Err(EngineError::config(
                setting,
                format!("expected one private key, found {}", more.len()),
            ))
        }
    };
    if key_password.is_some() {
        return Err(EngineError::config(
            "ssl.key.password",
            "the native engine does not decrypt PEM keys (share.engine=auto runs Kafka's Java \
             client for them); or give an unencrypted PKCS#8 key without ssl.key.password",
        ));
    }
    let der = block.der.as_ref().ok_or_else(|| {
        EngineError::config(
            setting,
            format!("the `{}` block is not valid base64", block.label),
        )
    })?;
    if !is_kafka_pkcs8(der) {
        let why = if block.label.contains("ENCRYPTED") {
            "the private key is encrypted and ssl.key.password is not set".to_string()
        } else {
            format!(
                "the `{}` block is not an unencrypted PKCS#8 RSA, DSA or EC key, which is all \
                 Kafka's client reads without ssl.key.password (convert it with \
                 `openssl pkcs8 -topk8 -nocrypt`)",
                block.label
            )
        };
        return Err(EngineError::config(setting, why));
    }
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(der.clone())))
}

struct KeyBlock {
    label: String,
    /// The decoded body; None when it is not base64.
    der: Option<Vec<u8>>,
}

/// The PEM blocks whose label ends in `PRIVATE KEY` (words separated by any white space), with
/// their bodies; header lines (`Proc-Type: ...`) are skipped, as Kafka's parser skips them.
fn private_key_blocks(pem: &str) -> Vec<KeyBlock> {
    let mut blocks = Vec::new();
    let mut lines = pem.lines();
    while let Some(line) = lines.next() {
        let Some(label) = marker(line, "BEGIN") else {
            continue;
        };
        if !is_private_key_label(&label) {
            continue;
        }
        let mut body = String::new();
        let mut ended = false;
        for line in lines.by_ref() {
            if marker(line, "END").is_some() {
                ended = true;
                break;
            }
            if !line.contains(':') {
                body.extend(line.chars().filter(|c| !c.is_whitespace()));
            }
        }
        if ended {
            blocks.push(KeyBlock {
                der: B64.decode(body.as_bytes()).ok(),
                label,
            });
        }
    }
    blocks
}

/// The label of a `-----BEGIN label-----` (or END) line, words joined by one space; text before
/// the dashes is allowed, as Kafka's pattern allows it.
fn marker(line: &str, which: &str) -> Option<String> {
    let at = line.find(&format!("-{which}"))?;
    let rest = line[at + 1 + which.len()..].trim_end();
    let label = rest.strip_suffix('-')?.trim_end_matches('-');
    Some(label.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn is_private_key_label(label: &str) -> bool {
    label == "PRIVATE KEY" || label.ends_with(" PRIVATE KEY")
}

/// A PKCS#8 `PrivateKeyInfo` (version 0 or 1) of an algorithm Kafka's key factories read.
fn is_kafka_pkcs8(der: &[u8]) -> bool {
    let parse = || -> Option<bool> {
        let (0x30, info, _) = der_element(der)? else {
            return None;
        };
        let (0x02, version, info) = der_element(info)? else {
            return None;
        };
        if version != [0] && version != [1] {
            return None;
        }
        let (0x30, algorithm, info) = der_element(info)? else {
            return None;
        };
        let (0x06, oid, _) = der_element(algorithm)? else {
            return None;
        };
        let (0x04, _, _) = der_element(info)? else {
            return None;
        };
        Some([RSA_ENCRYPTION, ID_DSA, ID_EC_PUBLIC_KEY].contains(&oid))
    };
    parse().unwrap_or(false)
}

/// One DER element: its tag, its contents and what follows it.
fn der_element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | b as usize);
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_markers() {
        assert_eq!(
            marker("-----BEGIN ENCRYPTED  PRIVATE KEY-----", "BEGIN").as_deref(),
            Some("ENCRYPTED PRIVATE KEY")
        );
        assert_eq!(marker("-----END PRIVATE KEY-----", "BEGIN"), None);
        assert!(is_private_key_label("RSA PRIVATE KEY"));
        assert!(!is_private_key_label("CERTIFICATE"));
        assert!(!is_private_key_label("PUBLIC KEY"));
    }

    #[test]
    fn der_elements_never_read_past_their_input() {
        assert_eq!(der_element(&[0x30]), None);
        assert_eq!(der_element(&[0x30, 0x05, 1, 2]), None);
        assert_eq!(der_element(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(
            der_element(&[0x04, 0x81, 0x01, 9, 7]),
            Some((0x04, &[9u8][..], &[7u8][..]))
        );
        assert!(!is_kafka_pkcs8(&[]));
    }
}
