//! `probe`: connect to a bootstrap broker and report the API versions and features it offers.

use std::fmt;
use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use crate::bootstrap::{connect_any, parse_bootstrap_servers};
use crate::connection::Connection;
use crate::error::EngineError;
use crate::protocol::error_codes;
use crate::security::Security;

/// One API the broker supports, with its version range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiVersionRange {
    pub api_key: i16,
    pub min_version: i16,
    pub max_version: i16,
}

/// What a broker answered to ApiVersions.
#[derive(Debug, Clone)]
pub struct ProbeReport {
    /// The "host:port" that answered.
    pub broker: String,
    pub api_versions: Vec<ApiVersionRange>,
    /// Finalized cluster features, e.g. ("share.version", 2).
    pub finalized_features: Vec<(String, i16)>,
}

impl ProbeReport {
    pub fn versions_of(&self, api: ApiKey) -> Option<(i16, i16)> {
        self.api_versions
            .iter()
            .find(|v| v.api_key == api as i16)
            .map(|v| (v.min_version, v.max_version))
    }

    pub fn share_fetch_versions(&self) -> Option<(i16, i16)> {
        self.versions_of(ApiKey::ShareFetch)
    }

    pub fn share_acknowledge_versions(&self) -> Option<(i16, i16)> {
        self.versions_of(ApiKey::ShareAcknowledge)
    }

    pub fn share_group_heartbeat_versions(&self) -> Option<(i16, i16)> {
        self.versions_of(ApiKey::ShareGroupHeartbeat)
    }

    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.finalized_features
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, level)| *level)
    }
}

impl fmt::Display for ProbeReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "broker {}:", self.broker)?;
        let apis = [
            ("ShareFetch", ApiKey::ShareFetch),
            ("ShareAcknowledge", ApiKey::ShareAcknowledge),
            ("ShareGroupHeartbeat", ApiKey::ShareGroupHeartbeat),
        ];
        for (i, (name, key)) in apis.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            match self.versions_of(*key) {
                Some((min, max)) if min == max => write!(f, "{sep}{name} v{min}")?,
                Some((min, max)) => write!(f, "{sep}{name} v{min}-{max}")?,
                None => write!(f, "{sep}{name} unsupported")?,
            }
        }
        if let Some(level) = self.feature_level("share.version") {
            write!(f, ", share.version={level}")?;
        }
        Ok(())
    }
}

/// Connects to the first reachable bootstrap address, sends ApiVersions, returns what the
/// broker offers.
pub async fn probe(bootstrap_servers: &str, timeout: Duration) -> Result<ProbeReport, EngineError> {
    probe_with(bootstrap_servers, &Security::plaintext(), timeout).await
}

/// [`probe`] over TLS and/or SASL.
pub async fn probe_with(
    bootstrap_servers: &str,
    security: &Security,
    timeout: Duration,
) -> Result<ProbeReport, EngineError> {
    let addresses = parse_bootstrap_servers(bootstrap_servers)?;
    let work = async {
        let conn = connect_any(&addresses, "sharesink-probe", timeout, security).await?;
        api_versions(&conn).await
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| EngineError::timeout(timeout, format!("probing {bootstrap_servers}")))?
}

/// Sends ApiVersions v3 on `conn` and returns the report.
pub(crate) async fn api_versions(conn: &Connection) -> Result<ProbeReport, EngineError> {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("sharesink-engine"))
        .with_client_software_version(StrBytes::from_static_str(crate::VERSION));
    let response: ApiVersionsResponse = conn.request(&request, 3).await?;
    if response.error_code != error_codes::NONE {
        return Err(EngineError::broker(
            "ApiVersions",
            response.error_code,
            None,
        ));
    }
    Ok(ProbeReport {
        broker: conn.addr().to_string(),
        api_versions: response
            .api_keys
            .iter()
            .map(|k| ApiVersionRange {
                api_key: k.api_key,
                min_version: k.min_version,
                max_version: k.max_version,
            })
            .collect(),
        finalized_features: response
            .finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.max_version_level))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_line() {
        let report = ProbeReport {
            broker: "127.0.0.1:39092".into(),
            api_versions: vec![
                ApiVersionRange {
                    api_key: 78,
                    min_version: 1,
                    max_version: 2,
                },
                ApiVersionRange {
                    api_key: 79,
                    min_version: 1,
                    max_version: 2,
                },
                ApiVersionRange {
                    api_key: 76,
                    min_version: 1,
                    max_version: 1,
                },
            ],
            finalized_features: vec![("share.version".into(), 2)],
        };
        assert_eq!(
            report.to_string(),
            "broker 127.0.0.1:39092: ShareFetch v1-2, ShareAcknowledge v1-2, ShareGroupHeartbeat v1, share.version=2"
        );
        assert_eq!(report.share_fetch_versions(), Some((1, 2)));
    }
}
