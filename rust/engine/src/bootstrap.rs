//! Bootstrap address list parsing and "first reachable broker" connection.

use std::time::Duration;

use tracing::debug;

use crate::connection::Connection;
use crate::error::EngineError;
use crate::security::Security;

/// Splits `bootstrap.servers` into "host:port" entries; a `SCHEME://` prefix is dropped.
pub fn parse_bootstrap_servers(value: &str) -> Result<Vec<String>, EngineError> {
    let mut out = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let entry = entry
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(entry);
        let valid_port = entry
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid_port {
            return Err(EngineError::config(
                "bootstrap.servers",
                format!("`{entry}` is not host:port"),
            ));
        }
        out.push(entry.to_string());
    }
    if out.is_empty() {
        return Err(EngineError::config("bootstrap.servers", "no address given"));
    }
    Ok(out)
}

/// Connects to the first address that accepts a TCP connection, in list order.
pub async fn connect_any(
    addresses: &[String],
    client_id: &str,
    timeout: Duration,
    security: &Security,
) -> Result<Connection, EngineError> {
    let mut last_error = None;
    for addr in addresses {
        match Connection::connect_with(addr, client_id, timeout, security).await {
            Ok(conn) => return Ok(conn),
            // Wrong credentials or trust fail the same way everywhere: stop at once.
            Err(e) if e.kind() == crate::ErrorKind::Authentication => return Err(e),
            Err(e) => {
                debug!(%addr, error = %e, "bootstrap address unreachable");
                last_error = Some(e);
            }
        }
    }
    Err(last_error.unwrap_or_else(|| EngineError::config("bootstrap.servers", "no address given")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists() {
        assert_eq!(
            parse_bootstrap_servers(" a:1, PLAINTEXT://b:2 ,").unwrap(),
            vec!["a:1".to_string(), "b:2".to_string()]
        );
        assert!(parse_bootstrap_servers("a").is_err());
        assert!(parse_bootstrap_servers("").is_err());
        assert!(parse_bootstrap_servers("a:x").is_err());
    }
}
