//! Connection security from Kafka's client settings: `security.protocol`, `sasl.mechanism`,
//! `sasl.jaas.config` and `ssl.*` (truststore as PEM or PKCS12; JKS is not readable here), under
//! the rules of Kafka 4.4's client for which settings go together. Store files are read only when
//! regular and bounded (`setting_files`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    client::WebPkiServerVerifier,
    pki_types, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::error::EngineError;
use crate::pem_key;
use crate::setting_files::read_setting_file;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl SaslMechanism {
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

#[derive(Clone)]
pub struct SaslCredentials {
    pub mechanism: SaslMechanism,
    pub username: String,
    pub password: String,
}

impl fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// How to open connections: plain TCP or TLS, then optionally SASL.
#[derive(Clone)]
pub struct Security {
    pub protocol: SecurityProtocol,
    pub sasl: Option<SaslCredentials>,
    pub(crate) tls: Option<Arc<ClientConfig>>,
}

impl fmt::Debug for Security {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Security")
            .field("protocol", &self.protocol)
            .field("sasl", &self.sasl)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Default for Security {
    fn default() -> Self {
        Security::plaintext()
    }
}

fn get<'a>(props: &'a HashMap<String, String>, key: &str) -> Option<&'a str> {
    props.get(key).map(|s| s.trim()).filter(|s| !s.is_empty())
}

impl Security {
    pub fn plaintext() -> Self {
        Security {
            protocol: SecurityProtocol::Plaintext,
            sasl: None,
            tls: None,
        }
    }

    pub fn from_properties(props: &HashMap<String, String>) -> Result<Self, EngineError> {
        let protocol = match get(props, "security.protocol")
            .unwrap_or("PLAINTEXT")
            .to_ascii_uppercase()
            .as_str()
        {
            "PLAINTEXT" => SecurityProtocol::Plaintext,
            "SSL" => SecurityProtocol::Ssl,
            "SASL_PLAINTEXT" => SecurityProtocol::SaslPlaintext,
            "SASL_SSL" => SecurityProtocol::SaslSsl,
            other => {
                return Err(EngineError::config(
                    "security.protocol",
                    format!("unknown protocol `{other}`"),
                ))
            }
        };
        let sasl = match protocol {
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {
                Some(sasl_credentials(props)?)
            }
            _ => None,
        };
        let tls = match protocol {
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl => Some(Arc::new(tls_config(props)?)),
            _ => None,
        };
        Ok(Security {
            protocol,
            sasl,
            tls,
        })
    }
}

fn sasl_credentials(props: &HashMap<String, String>) -> Result<SaslCredentials, EngineError> {
    let mechanism = match get(props, "sasl.mechanism")
        .unwrap_or("GSSAPI")
        .to_ascii_uppercase()
        .as_str()
    {
        "PLAIN" => SaslMechanism::Plain,
        "SCRAM-SHA-256" => SaslMechanism::ScramSha256,
        "SCRAM-SHA-512" => SaslMechanism::ScramSha512,
        other => {
            return Err(EngineError::config(
                "sasl.mechanism",
                format!("`{other}` is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 are)"),
            ))
        }
    };
    let jaas = get(props, "sasl.jaas.config")
        .ok_or_else(|| EngineError::config("sasl.jaas.config", "required for SASL"))?;
    let username = jaas_option(jaas, "username")
        .ok_or_else(|| EngineError::config("sasl.jaas.config", "no username=\"...\" option"))?;
    let password = jaas_option(jaas, "password")
        .ok_or_else(|| EngineError::config("sasl.jaas.config", "no password=\"...\" option"))?;
    Ok(SaslCredentials {
        mechanism,
        username,
        password,
    })
}

/// Reads `name="value"` (or `name=value`) from a JAAS line such as
/// `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`.
fn jaas_option(jaas: &str, name: &str) -> Option<String> {
    let mut rest = jaas;
    while let Some(at) = rest.find(name) {
        let before_ok = at == 0 || rest[..at].ends_with(|c: char| c.is_whitespace());
        let after = rest[at + name.len()..].trim_start();
        rest = &rest[at + name.len()..];
        let Some(value) = after.strip_prefix('=').map(str::trim_start) else {
            continue;
        };
        if !before_ok {
            continue;
        }
        if let Some(quoted) = value.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => return Some(out),
                    c => out.push(c),
                }
            }
            return None;
        }
        let end = value
            .find(|c: char| c.is_whitespace() || c == ';')
            .unwrap_or(value.len());
        return Some(value[..end].to_string());
    }
    None
}

fn store_type(props: &HashMap<String, String>, key: &str) -> String {
    // Kafka's default store type is JKS.
    get(props, key).unwrap_or("JKS").to_ascii_uppercase()
}

/// The CA certificates to trust, from the settings Kafka's client reads and under its rules
/// (`DefaultSslEngineFactory.createTruststore`): `ssl.truststore.certificates` only with type
/// PEM, never with a location, and a PEM store never with a password.
fn trust_anchors(
    props: &HashMap<String, String>,
) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let kind = store_type(props, "ssl.truststore.type");
    let location = get(props, "ssl.truststore.location");
    let password = get(props, "ssl.truststore.password");
    if let Some(pem) = get(props, "ssl.truststore.certificates") {
        if kind != "PEM" {
            return Err(EngineError::config(
                "ssl.truststore.certificates",
                format!("can be set only with ssl.truststore.type=PEM, not {kind}"),
            ));
        }
        if location.is_some() {
            return Err(EngineError::config(
                "ssl.truststore.location",
                "cannot be set together with ssl.truststore.certificates",
            ));
        }
        if password.is_some() {
            return Err(EngineError::config(
                "ssl.truststore.password",
                "cannot be set for a PEM trust store",
            ));
        }
        return pem_certificates(pem.as_bytes(), "ssl.truststore.certificates");
    }
    let Some(location) = location else {
        if password.is_some() {
            return Err(EngineError::config(
                "ssl.truststore.password",
                "set without ssl.truststore.location",
            ));
        }
        // Like Java's default trust store: the system's certificates.
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            return Err(EngineError::config(
                "ssl.truststore.location",
                "not set and no system CA certificates were found",
            ));
        }
        return Ok(found.certs);
    };
    if kind == "PEM" && password.is_some() {
        return Err(EngineError::config(
            "ssl.truststore.password",
            "cannot be set for a PEM trust store",
        ));
    }
    if kind != "PEM" && kind != "PKCS12" {
        return Err(EngineError::config(
            "ssl.truststore.type",
            format!("{kind} truststores cannot be read by the engine; use PKCS12 or PEM"),
        ));
    }
    let data = read_setting_file("ssl.truststore.location", location)?;
    if kind == "PEM" {
        return pem_certificates(&data, "ssl.truststore.location");
    }
    let archive =
        p12_keystore::Pkcs12Archive::from_pkcs12(&data, password.unwrap_or("")).map_err(|e| {
            EngineError::config(
                "ssl.truststore.location",
                format!("cannot open PKCS12 {location}: {e}"),
            )
        })?;
    Ok(archive
        .certs
        .iter()
        .map(|bag| CertificateDer::from(bag.cert.as_der().to_vec()))
        .collect())
}

/// The certificates of a PEM text; at least one, as Kafka's client requires.
fn pem_certificates(
    pem: &[u8],
    setting: &str,
) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::config(setting, format!("bad PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(EngineError::config(setting, "no certificate found"));
    }
    Ok(certs)
}

fn tls_config(props: &HashMap<String, String>) -> Result<ClientConfig, EngineError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    for cert in trust_anchors(props)? {
        roots.add(cert).map_err(|e| {
            EngineError::config(
                "ssl.truststore.location",
                format!("unusable CA certificate: {e}"),
            )
        })?;
    }
    let roots = Arc::new(roots);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| EngineError::Internal(format!("TLS setup: {e}")))?;
    // `ssl.endpoint.identification.algorithm` = "" turns host name checking off (chain still checked).
    let check_hostname = props
        .get("ssl.endpoint.identification.algorithm")
        .map(|v| !v.trim().is_empty())
        .unwrap_or(true);
    let builder = if check_hostname {
        builder.with_root_certificates(roots)
    } else {
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| EngineError::Internal(format!("TLS setup: {e}")))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyHostName(inner)))
    };
    match client_identity(props)? {
        None => Ok(builder.with_no_client_auth()),
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|e| {
            EngineError::config("ssl.keystore.key", format!("unusable client key: {e}"))
        }),
    }
}

type ClientIdentity = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// A PEM key store: the certificate chain and the one private key (`pem_key`), each from the text
/// of the setting named with it.
fn pem_identity(
    chain: (&str, &str),
    key: (&str, &str),
    key_password: Option<&str>,
) -> Result<ClientIdentity, EngineError> {
    let key = pem_key::private_key(key.0, key_password, key.1)?;
    let chain = pem_certificates(chain.0.as_bytes(), chain.1)?;
    Ok((chain, key))
}

/// The client certificate chain and key for mutual TLS, from Kafka's settings and under its rules
/// (`DefaultSslEngineFactory.createKeystore`): `ssl.keystore.certificate.chain` with
/// `ssl.keystore.key` (type PEM, no location, no store password), a PEM file at
/// `ssl.keystore.location` (no store password), or a PKCS12 keystore with its password. A PEM
/// key follows `pem_key`'s rule.
fn client_identity(props: &HashMap<String, String>) -> Result<Option<ClientIdentity>, EngineError> {
    let kind = store_type(props, "ssl.keystore.type");
    let location = get(props, "ssl.keystore.location");
    let password = get(props, "ssl.keystore.password");
    let key_password = get(props, "ssl.key.password");
    let pem_password_refused = || {
        EngineError::config(
            "ssl.keystore.password",
            "cannot be set for a PEM key store; only ssl.key.password can",
        )
    };
    let chain = get(props, "ssl.keystore.certificate.chain");
    if let Some(key) = get(props, "ssl.keystore.key") {
        if kind != "PEM" {
            return Err(EngineError::config(
                "ssl.keystore.key",
                format!("can be set only with ssl.keystore.type=PEM, not {kind}"),
            ));
        }
        let Some(chain) = chain else {
            return Err(EngineError::config(
                "ssl.keystore.certificate.chain",
                "required with ssl.keystore.key",
            ));
        };
        if location.is_some() {
            return Err(EngineError::config(
                "ssl.keystore.location",
                "cannot be set together with ssl.keystore.key",
            ));
        }
        if password.is_some() {
            return Err(pem_password_refused());
        }
        return pem_identity(
            (chain, "ssl.keystore.certificate.chain"),
            (key, "ssl.keystore.key"),
            key_password,
        )
        .map(Some);
    }
    if chain.is_some() {
        return Err(EngineError::config(
            "ssl.keystore.certificate.chain",
            "set without ssl.keystore.key",
        ));
    }
    let Some(location) = location else {
        if password.is_some() {
            return Err(EngineError::config(
                "ssl.keystore.password",
                "set without ssl.keystore.location",
            ));
        }
        return Ok(None);
    };
    if kind == "PEM" {
        if password.is_some() {
            return Err(pem_password_refused());
        }
        // Kafka reads the file as both the chain and the key.
        let data = read_setting_file("ssl.keystore.location", location)?;
        let text = String::from_utf8_lossy(&data);
        let setting = "ssl.keystore.location";
        return pem_identity((&text, setting), (&text, setting), key_password).map(Some);
    }
    if kind != "PKCS12" {
        return Err(EngineError::config(
            "ssl.keystore.type",
            format!("{kind} keystores cannot be read by the engine; use PKCS12 or PEM"),
        ));
    }
    let Some(password) = password else {
        return Err(EngineError::config(
            "ssl.keystore.password",
            "required with ssl.keystore.location",
        ));
    };
    let data = read_setting_file("ssl.keystore.location", location)?;
    let store = p12_keystore::KeyStore::from_pkcs12(
        &data,
        password,
        p12_keystore::Pkcs12ImportPolicy::Relaxed,
    )
    .map_err(|e| {
        EngineError::config(
            "ssl.keystore.location",
            format!("cannot open PKCS12 {location}: {e}"),
        )
    })?;
    let chain = store
        .entries()
        .find_map(|(_, entry)| match entry {
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain) => Some(chain.clone()),
            _ => None,
        })
        .ok_or_else(|| {
            EngineError::config(
                "ssl.keystore.location",
                format!("{location} holds no private key"),
            )
        })?;
    let certs = chain
        .certs()
        .iter()
        .map(|c| CertificateDer::from(c.as_der().to_vec()))
        .collect();
    let key = PrivateKeyDer::try_from(chain.key().as_der().to_vec()).map_err(|e| {
        EngineError::config(
            "ssl.keystore.location",
            format!("unusable private key: {e}"),
        )
    })?;
    Ok(Some((certs, key)))
}

/// Checks the certificate chain but accepts any host name.
#[derive(Debug)]
struct AnyHostName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The TLS server name for "host:port".
pub(crate) fn server_name(addr: &str) -> Result<pki_types::ServerName<'static>, EngineError> {
    let host = addr.rsplit_once(':').map(|(h, _)| h).unwrap_or(addr);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string()).map_err(|e| {
        EngineError::config(
            "bootstrap.servers",
            format!("`{host}` is not a valid TLS server name: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::setting_files::test_support::{FifoWithWriter, TempDir};
    use crate::setting_files::MAX_SETTING_FILE_BYTES;

    fn props(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_jaas_options() {
        let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="al\"ice" password="s3cr=t;";"#;
        assert_eq!(jaas_option(jaas, "username").as_deref(), Some("al\"ice"));
        assert_eq!(jaas_option(jaas, "password").as_deref(), Some("s3cr=t;"));
        assert_eq!(
            jaas_option("x required user_name=\"a\" username=bob;", "username").as_deref(),
            Some("bob")
        );
        assert_eq!(jaas_option("x required", "password"), None);
    }

    #[test]
    fn sasl_settings() {
        let s = Security::from_properties(&props(&[
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            (
                "sasl.jaas.config",
                "m required username=\"u\" password=\"p\";",
            ),
        ]))
        .unwrap();
        let creds = s.sasl.unwrap();
        assert_eq!(creds.mechanism, SaslMechanism::ScramSha512);
        assert_eq!(
            (creds.username.as_str(), creds.password.as_str()),
            ("u", "p")
        );
        assert!(!format!("{creds:?}").contains("\"p\""));
        let e = Security::from_properties(&props(&[
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "GSSAPI"),
        ]))
        .unwrap_err();
        assert!(
            matches!(e, EngineError::Config { ref key, .. } if key == "sasl.mechanism"),
            "{e}"
        );
        let e = Security::from_properties(&props(&[
            ("security.protocol", "SSL"),
            ("ssl.truststore.location", "/nonexistent"),
            ("ssl.truststore.type", "PKCS12"),
        ]))
        .unwrap_err();
        assert!(
            matches!(e, EngineError::Config { ref key, .. } if key == "ssl.truststore.location"),
            "{e}"
        );
    }

    fn data(name: &str) -> String {
        format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn client_certificates_from_pem_settings_pem_file_and_pkcs12() {
        let cert = std::fs::read_to_string(data("client-cert.pem")).unwrap();
        let key = std::fs::read_to_string(data("client-key.pk8.pem")).unwrap();
        let with = |extra: &[(&str, &str)]| {
            let mut p = props(&[("security.protocol", "SSL"), ("ssl.truststore.type", "PEM")]);
            p.insert("ssl.truststore.certificates".into(), cert.clone());
            for (k, v) in extra {
                p.insert(k.to_string(), v.to_string());
            }
            Security::from_properties(&p)
        };
        let has_client_cert = |s: Security| s.tls.unwrap().client_auth_cert_resolver.has_certs();
        assert!(has_client_cert(
            with(&[
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.certificate.chain", &cert),
                ("ssl.keystore.key", &key),
            ])
            .unwrap()
        ));
        let both =
            std::env::temp_dir().join(format!("sharesink-identity-{}.pem", std::process::id()));
        std::fs::write(&both, format!("{cert}{key}")).unwrap();
        let file = with(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", both.to_str().unwrap()),
        ]);
        let _ = std::fs::remove_file(&both);
        assert!(has_client_cert(file.unwrap()));
        let p12 = data("client.p12");
        assert!(has_client_cert(
            with(&[
                ("ssl.keystore.type", "PKCS12"),
                ("ssl.keystore.location", &p12),
                ("ssl.keystore.password", "secret"),
            ])
            .unwrap()
        ));
        let wrong = with(&[
            ("ssl.keystore.type", "PKCS12"),
            ("ssl.keystore.location", &p12),
            ("ssl.keystore.password", "nope"),
        ])
        .unwrap_err();
        assert!(
            matches!(wrong, EngineError::Config { ref key, .. } if key == "ssl.keystore.location"),
            "{wrong}"
        );
        assert!(!has_client_cert(with(&[]).unwrap()));
    }

    /// `pem-key-rule.txt`: the rows of Kafka 4.4's rule for a PEM key store's key, each with
    /// what the engine must do, for the inline settings and for a PEM file.
    #[test]
    fn pem_keys_follow_kafkas_rule() {
        let dir = TempDir::new("pem-rule");
        let cert = std::fs::read_to_string(data("client-cert.pem")).unwrap();
        let table = std::fs::read_to_string(data("pem-key-rule.txt")).unwrap();
        let mut rows = 0;
        for line in table
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let [keys, password, _kafka, engine] = cols[..] else {
                panic!("bad row {line:?}");
            };
            let key: String = keys
                .split('+')
                .map(|f| std::fs::read_to_string(data(f)).unwrap())
                .collect();
            let file = dir.path(&format!("row{rows}.pem"));
            std::fs::write(&file, format!("{cert}{key}")).unwrap();
            let base = |extra: &[(&str, &str)]| {
                let mut p = props(&[
                    ("security.protocol", "SSL"),
                    ("ssl.truststore.type", "PEM"),
                    ("ssl.keystore.type", "PEM"),
                ]);
                p.insert("ssl.truststore.certificates".into(), cert.clone());
                if password != "-" {
                    p.insert("ssl.key.password".into(), password.into());
                }
                for (k, v) in extra {
                    p.insert(k.to_string(), v.to_string());
                }
                p
            };
            let inline = base(&[
                ("ssl.keystore.certificate.chain", &cert),
                ("ssl.keystore.key", &key),
            ]);
            let in_file = base(&[("ssl.keystore.location", file.to_str().unwrap())]);
            for (form, settings, own_key) in [
                ("inline", inline, "ssl.keystore.key"),
                ("file", in_file, "ssl.keystore.location"),
            ] {
                let outcome = Security::from_properties(&settings);
                let expected_key = match engine {
                    "accepts" => {
                        assert!(outcome.is_ok(), "{line} ({form}): {:?}", outcome.err());
                        continue;
                    }
                    "refuses" => own_key,
                    "refuses:ssl.key.password" => "ssl.key.password",
                    other => panic!("unknown outcome {other}"),
                };
                match outcome {
                    Err(EngineError::Config { key, message }) => {
                        assert_eq!(key, expected_key, "{line} ({form}): {message}");
                        assert!(!message.contains("BEGIN"), "no key material: {message}");
                    }
                    other => panic!("{line} ({form}): expected a refusal, got {other:?}"),
                }
            }
            rows += 1;
        }
        assert!(rows >= 8, "the table has {rows} rows");
    }

    /// Kafka's client refuses these combinations of store settings; so does the engine, on the
    /// setting named.
    #[test]
    fn store_settings_combine_as_kafkas_client_allows() {
        let cert = std::fs::read_to_string(data("client-cert.pem")).unwrap();
        let key = std::fs::read_to_string(data("client-key.pk8.pem")).unwrap();
        let p12 = data("client.p12");
        let refused_on = |pairs: &[(&str, &str)]| -> String {
            let mut p = props(&[("security.protocol", "SSL")]);
            for (k, v) in pairs {
                p.insert(k.to_string(), v.to_string());
            }
            match Security::from_properties(&p) {
                Err(EngineError::Config { key, .. }) => key,
                other => panic!("{pairs:?}: expected a refusal, got {other:?}"),
            }
        };
        let trust_pem = [
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", cert.as_str()),
        ];
        fn joined<'a>(
            a: &[(&'a str, &'a str)],
            b: &[(&'a str, &'a str)],
        ) -> Vec<(&'a str, &'a str)> {
            a.iter().chain(b).copied().collect()
        }
        assert_eq!(
            refused_on(&[("ssl.truststore.certificates", cert.as_str())]),
            "ssl.truststore.certificates",
            "certificates need type PEM (Kafka's default is JKS)"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[("ssl.truststore.location", p12.as_str())]
            )),
            "ssl.truststore.location"
        );
        assert_eq!(
            refused_on(&joined(&trust_pem, &[("ssl.truststore.password", "x")])),
            "ssl.truststore.password"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[
                    ("ssl.keystore.type", "PEM"),
                    ("ssl.keystore.key", key.as_str()),
                ]
            )),
            "ssl.keystore.certificate.chain",
            "a key without its chain"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[
                    ("ssl.keystore.type", "PEM"),
                    ("ssl.keystore.certificate.chain", cert.as_str()),
                ]
            )),
            "ssl.keystore.certificate.chain",
            "a chain without its key"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[
                    ("ssl.keystore.certificate.chain", cert.as_str()),
                    ("ssl.keystore.key", key.as_str()),
                ]
            )),
            "ssl.keystore.key",
            "an inline key needs type PEM"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[
                    ("ssl.keystore.type", "PEM"),
                    ("ssl.keystore.certificate.chain", cert.as_str()),
                    ("ssl.keystore.key", key.as_str()),
                    ("ssl.keystore.password", "x"),
                ]
            )),
            "ssl.keystore.password"
        );
        assert_eq!(
            refused_on(&joined(
                &trust_pem,
                &[
                    ("ssl.keystore.type", "PKCS12"),
                    ("ssl.keystore.location", p12.as_str()),
                ]
            )),
            "ssl.keystore.password",
            "a PKCS12 key store needs its password"
        );
    }

    /// Hostile paths for either store: refused on the store's location setting, without
    /// blocking on a FIFO or reading past the bound.
    #[test]
    fn store_files_are_regular_and_bounded() {
        let dir = TempDir::new("hostile-stores");
        let cert = std::fs::read_to_string(data("client-cert.pem")).unwrap();
        let key = std::fs::read_to_string(data("client-key.pk8.pem")).unwrap();
        let sparse = dir.path("sparse.pem");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(MAX_SETTING_FILE_BYTES + 1)
            .unwrap();
        let directory = dir.path("a-directory");
        std::fs::create_dir(&directory).unwrap();
        for (store, content) in [
            ("ssl.truststore.location", cert.clone()),
            ("ssl.keystore.location", format!("{cert}{key}")),
        ] {
            // Every FIFO has a writer ready with a store that would be taken if it were read.
            let fifo = FifoWithWriter::new(
                dir.path(&format!("{store}.fifo")),
                content.clone().into_bytes(),
            );
            for path in [
                fifo.path(),
                "/dev/zero",
                sparse.to_str().unwrap(),
                directory.to_str().unwrap(),
            ] {
                let mut p = props(&[
                    ("security.protocol", "SSL"),
                    ("ssl.truststore.type", "PEM"),
                    ("ssl.keystore.type", "PEM"),
                ]);
                if store == "ssl.keystore.location" {
                    p.insert("ssl.truststore.certificates".into(), cert.clone());
                }
                p.insert(store.into(), path.into());
                match Security::from_properties(&p) {
                    Err(EngineError::Config { key, message }) => {
                        assert_eq!(key, store, "{path}: {message}");
                        assert!(message.contains(path), "{message}");
                    }
                    other => panic!("{store}={path}: expected a refusal, got {other:?}"),
                }
            }
        }
    }

    #[test]
    fn server_names() {
        assert!(server_name("127.0.0.1:9093").is_ok());
        assert!(server_name("broker-1.example.com:9093").is_ok());
        assert!(server_name("[::1]:9093").is_ok());
    }
}
