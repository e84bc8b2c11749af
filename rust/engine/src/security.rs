//! Connection security from Kafka's client settings: `security.protocol`, `sasl.mechanism`,
//! `sasl.jaas.config` and `ssl.*` (truststore as PEM or PKCS12; JKS is not readable here).

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

fn trust_anchors(
    props: &HashMap<String, String>,
) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let kind = get(props, "ssl.truststore.type")
        .unwrap_or("JKS")
        .to_ascii_uppercase();
    if let Some(pem) = get(props, "ssl.truststore.certificates") {
        return CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                EngineError::config("ssl.truststore.certificates", format!("bad PEM: {e}"))
            });
    }
    let Some(location) = get(props, "ssl.truststore.location") else {
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
    let data = std::fs::read(location).map_err(|e| {
        EngineError::config(
            "ssl.truststore.location",
            format!("cannot read {location}: {e}"),
        )
    })?;
    match kind.as_str() {
        "PEM" => CertificateDer::pem_slice_iter(&data)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                EngineError::config(
                    "ssl.truststore.location",
                    format!("bad PEM in {location}: {e}"),
                )
            }),
        "PKCS12" => {
            let password = get(props, "ssl.truststore.password").unwrap_or("");
            let archive =
                p12_keystore::Pkcs12Archive::from_pkcs12(&data, password).map_err(|e| {
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
        other => Err(EngineError::config(
            "ssl.truststore.type",
            format!("{other} truststores cannot be read by the engine; use PKCS12 or PEM"),
        )),
    }
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

fn pem_identity(pem: &[u8], setting: &str) -> Result<ClientIdentity, EngineError> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| EngineError::config(setting, format!("bad PEM certificate: {e}")))?;
    if chain.is_empty() {
        return Err(EngineError::config(setting, "no certificate found"));
    }
    let key = PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| EngineError::config(setting, format!("no unencrypted private key: {e}")))?;
    Ok((chain, key))
}

/// The client certificate chain and key for mutual TLS, from Kafka's PEM settings
/// (`ssl.keystore.certificate.chain` + `ssl.keystore.key`, or a PEM file at
/// `ssl.keystore.location` with `ssl.keystore.type=PEM`) or a PKCS12 keystore. Encrypted PEM
/// keys are refused.
fn client_identity(props: &HashMap<String, String>) -> Result<Option<ClientIdentity>, EngineError> {
    if let (Some(chain), Some(key)) = (
        get(props, "ssl.keystore.certificate.chain"),
        get(props, "ssl.keystore.key"),
    ) {
        if get(props, "ssl.key.password").is_some() {
            return Err(EngineError::config(
                "ssl.key.password",
                "encrypted PEM keys are not supported; pass an unencrypted PKCS#8 key",
            ));
        }
        let (certs, _) = pem_identity(
            format!("{chain}\n{key}").as_bytes(),
            "ssl.keystore.certificate.chain",
        )?;
        let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| {
            EngineError::config(
                "ssl.keystore.key",
                format!("no unencrypted private key: {e}"),
            )
        })?;
        return Ok(Some((certs, key)));
    }
    let Some(location) = get(props, "ssl.keystore.location") else {
        return Ok(None);
    };
    let data = std::fs::read(location).map_err(|e| {
        EngineError::config(
            "ssl.keystore.location",
            format!("cannot read {location}: {e}"),
        )
    })?;
    match get(props, "ssl.keystore.type")
        .unwrap_or("JKS")
        .to_ascii_uppercase()
        .as_str()
    {
        "PEM" => pem_identity(&data, "ssl.keystore.location").map(Some),
        "PKCS12" => {
            let password = get(props, "ssl.keystore.password").unwrap_or("");
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
        other => Err(EngineError::config(
            "ssl.keystore.type",
            format!("{other} keystores cannot be read by the engine; use PKCS12 or PEM"),
        )),
    }
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

    #[test]
    fn server_names() {
        assert!(server_name("127.0.0.1:9093").is_ok());
        assert!(server_name("broker-1.example.com:9093").is_ok());
        assert!(server_name("[::1]:9093").is_ok());
    }
}
