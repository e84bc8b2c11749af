//! SASL authentication on a fresh connection: SaslHandshake v1, then SaslAuthenticate v2
//! rounds for PLAIN or SCRAM-SHA-256/512 (RFC 5802, as Kafka implements it).

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use sha2::{Digest, Sha256, Sha512};

use crate::connection::Connection;
use crate::error::EngineError;
use crate::security::{SaslCredentials, SaslMechanism};

pub(crate) async fn authenticate(
    conn: &Connection,
    creds: &SaslCredentials,
) -> Result<(), EngineError> {
    let mechanism = creds.mechanism.name();
    let handshake: SaslHandshakeResponse = conn
        .request(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)),
            1,
        )
        .await?;
    if handshake.error_code != 0 {
        let offered: Vec<&str> = handshake.mechanisms.iter().map(|m| m.as_str()).collect();
        return Err(EngineError::Authentication(format!(
            "broker {} does not accept SASL mechanism {mechanism} (it offers {offered:?})",
            conn.addr()
        )));
    }
    match creds.mechanism {
        SaslMechanism::Plain => {
            let message = format!("\0{}\0{}", creds.username, creds.password);
            round(conn, message.into_bytes()).await?;
            Ok(())
        }
        SaslMechanism::ScramSha256 => scram(conn, creds, ScramHash::Sha256).await,
        SaslMechanism::ScramSha512 => scram(conn, creds, ScramHash::Sha512).await,
    }
}

async fn round(conn: &Connection, auth_bytes: Vec<u8>) -> Result<Bytes, EngineError> {
    let response: SaslAuthenticateResponse = conn
        .request(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(auth_bytes)),
            2,
        )
        .await?;
    if response.error_code != 0 {
        return Err(EngineError::Authentication(format!(
            "{} rejected the credentials: {}",
            conn.addr(),
            response
                .error_message
                .as_deref()
                .unwrap_or("authentication failed")
        )));
    }
    Ok(response.auth_bytes)
}

/// SCRAM user names escape '=' and ','.
fn scram_escape(name: &str) -> String {
    name.replace('=', "=3D").replace(',', "=2C")
}

fn attribute(message: &str, key: char) -> Option<&str> {
    message
        .split(',')
        .find_map(|part| part.strip_prefix(key).and_then(|p| p.strip_prefix('=')))
}

/// The hash of a SCRAM mechanism.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

impl ScramHash {
    fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramHash::Sha512 => {
                let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    fn salted_password(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                pbkdf2::pbkdf2_hmac_array::<Sha256, 32>(password, salt, iterations).to_vec()
            }
            ScramHash::Sha512 => {
                pbkdf2::pbkdf2_hmac_array::<Sha512, 64>(password, salt, iterations).to_vec()
            }
        }
    }
}

/// Iteration counts a Kafka broker can hold SCRAM credentials with (its `ScramMechanism`).
const SCRAM_ITERATIONS: std::ops::RangeInclusive<u32> = 4096..=16384;

/// The SCRAM exchange; `client_nonce` is a parameter so tests can use RFC vectors.
pub(crate) struct ScramClient {
    password: String,
    client_nonce: String,
    client_first_bare: String,
}

impl ScramClient {
    pub fn new(username: &str, password: &str, client_nonce: String) -> Self {
        let client_first_bare = format!("n={},r={client_nonce}", scram_escape(username));
        ScramClient {
            password: password.into(),
            client_nonce,
            client_first_bare,
        }
    }

    pub fn client_first(&self) -> String {
        format!("n,,{}", self.client_first_bare)
    }

    /// Returns (client-final message, expected server signature).
    pub fn client_final(
        &self,
        hash: ScramHash,
        server_first: &str,
    ) -> Result<(String, Vec<u8>), EngineError> {
        let bad = |what: &str| {
            EngineError::Authentication(format!("bad SCRAM server-first message ({what})"))
        };
        let nonce = attribute(server_first, 'r').ok_or_else(|| bad("no nonce"))?;
        if !nonce.starts_with(&self.client_nonce) {
            return Err(bad("nonce does not extend ours"));
        }
        let salt = B64
            .decode(attribute(server_first, 's').ok_or_else(|| bad("no salt"))?)
            .map_err(|_| bad("salt"))?;
        let iterations: u32 = attribute(server_first, 'i')
            .and_then(|i| i.parse().ok())
            .ok_or_else(|| bad("iterations"))?;
        // Kafka stores SCRAM credentials with 4096..=16384 iterations, and its Java client
        // refuses fewer than 4096. The upper bound matters more: PBKDF2 runs synchronously on
        // a runtime thread, and a server asking for 2^32 iterations would hold it for hours.
        if !SCRAM_ITERATIONS.contains(&iterations) {
            return Err(bad(&format!(
                "iteration count {iterations} outside {}..={}",
                SCRAM_ITERATIONS.start(),
                SCRAM_ITERATIONS.end()
            )));
        }
        let salted = hash.salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = hash.hmac(&salted, b"Client Key");
        let stored_key = hash.digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hash.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let server_key = hash.hmac(&salted, b"Server Key");
        let server_signature = hash.hmac(&server_key, auth_message.as_bytes());
        Ok((
            format!("{without_proof},p={}", B64.encode(proof)),
            server_signature,
        ))
    }
}

async fn scram(
    conn: &Connection,
    creds: &SaslCredentials,
    hash: ScramHash,
) -> Result<(), EngineError> {
    let nonce = B64.encode(
        [
            uuid::Uuid::new_v4().into_bytes(),
            uuid::Uuid::new_v4().into_bytes(),
        ]
        .concat(),
    );
    let client = ScramClient::new(&creds.username, &creds.password, nonce);
    let server_first = round(conn, client.client_first().into_bytes()).await?;
    let server_first = String::from_utf8_lossy(&server_first).into_owned();
    let (client_final, expected) = client.client_final(hash, &server_first)?;
    let server_final = round(conn, client_final.into_bytes()).await?;
    check_server_final(
        &String::from_utf8_lossy(&server_final),
        &expected,
        conn.addr(),
    )
}

/// Accepts a SCRAM server-final message only with the expected server signature.
pub(crate) fn check_server_final(
    server_final: &str,
    expected: &[u8],
    addr: &str,
) -> Result<(), EngineError> {
    if let Some(e) = attribute(server_final, 'e') {
        return Err(EngineError::Authentication(format!(
            "SCRAM authentication failed: {e}"
        )));
    }
    let verifier = attribute(server_final, 'v').and_then(|v| B64.decode(v).ok());
    if verifier.as_deref() != Some(expected) {
        return Err(EngineError::Authentication(format!(
            "{addr} sent a wrong SCRAM server signature"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7677 section 3 test vector (SCRAM-SHA-256).
    #[test]
    fn scram_sha256_rfc7677_vector() {
        let client = ScramClient::new("user", "pencil", "rOprNGfwEbeRWgbNEkqO".into());
        assert_eq!(client.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let (client_final, server_signature) = client
            .client_final(ScramHash::Sha256, server_first)
            .unwrap();
        assert_eq!(
            client_final,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        assert_eq!(
            B64.encode(server_signature),
            "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
        );
    }

    #[test]
    fn refuses_iteration_counts_a_broker_cannot_have() {
        let client = ScramClient::new("user", "pencil", "abc".into());
        for i in [
            "0",
            "1",
            "4095",
            "16385",
            "4294967295",
            "-1",
            "99999999999",
            "",
        ] {
            let server_first = format!("r=abcdef,s=c2FsdA==,i={i}");
            let e = client
                .client_final(ScramHash::Sha512, &server_first)
                .unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::Authentication, "{i}: {e}");
        }
        assert!(client
            .client_final(ScramHash::Sha512, "r=abcdef,s=c2FsdA==,i=16384")
            .is_ok());
    }

    #[test]
    fn server_final_needs_the_expected_signature() {
        let expected = b"signature";
        let good = format!("v={}", B64.encode(expected));
        assert!(check_server_final(&good, expected, "b:1").is_ok());
        for bad in [
            "",
            "v=",
            "v=!!",
            "e=invalid-proof",
            "v=c2lnbmF0dXJl,e=x",
            ",,,=v",
        ] {
            assert!(check_server_final(bad, expected, "b:1").is_err(), "{bad}");
        }
    }

    #[test]
    fn escapes_user_names() {
        assert_eq!(scram_escape("a=b,c"), "a=3Db=2Cc");
    }
}
