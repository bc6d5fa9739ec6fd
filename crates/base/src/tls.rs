//! Outgoing TLS: the one rustls client configuration every HTTP client of engram shares
//! (embeddings, the LLM, the rerank stage, traces), and the words a failed connection is
//! described with, for logs, `/readyz` and error messages alike.
//!
//! Trusted: the platform's roots, webpki's roots, and the PEM bundle `tls.ca_file` (a
//! private CA). PostgreSQL connects through sqlx's own rustls (see [`crate::db`]).

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, RootCertStore};

use crate::configuration::TlsSettings;

/// The trust of every outgoing HTTP client: cheap to clone.
#[derive(Clone)]
pub struct Trust {
    config: Arc<rustls::ClientConfig>,
}

impl Trust {
    /// The platform's and webpki's roots, plus the certificates in `ca_file`.
    pub fn new(ca_file: Option<&Path>) -> Result<Self, String> {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // A platform certificate rustls cannot parse is skipped; the rest still count.
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        if let Some(path) = ca_file {
            let certs = read_certificates(path)?;
            for cert in certs {
                roots.add(cert).map_err(|e| format!("tls.ca_file {}: {e}", path.display()))?;
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self { config: Arc::new(config) })
    }

    /// The trust `[tls]` configures.
    pub fn from_settings(settings: &TlsSettings) -> Result<Self, String> {
        Self::new(settings.ca_file.as_deref())
    }

    /// A reqwest builder that speaks TLS with this trust; the caller adds its timeouts.
    pub fn http_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder().tls_backend_preconfigured((*self.config).clone())
    }

    /// A client with a connect timeout, for the model endpoints.
    pub fn http_client(&self, connect_timeout: Duration) -> Result<reqwest::Client, String> {
        self.http_builder()
            .connect_timeout(connect_timeout)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))
    }
}

impl Default for Trust {
    /// The public roots only; building it cannot fail.
    fn default() -> Self {
        Self::new(None).expect("the public roots make a TLS configuration")
    }
}

impl fmt::Debug for Trust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Trust")
    }
}

/// The crypto of every TLS connection engram makes or serves: *ring*, which sqlx's
/// rustls uses as well, so one provider is built into the binary, with no C toolchain
/// beyond a compiler. It is also made the process default, for the clients libraries
/// build on their own (async-openai's `reqwest::Client::new()`).
#[allow(deprecated, reason = "rustls now prefers aws-lc-rs; ring remains supported")]
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    let provider = rustls::crypto::ring::default_provider();
    // Err only when a default is already installed: the same provider, or the caller's.
    let _ = provider.clone().install_default();
    Arc::new(provider)
}

/// What `server.tls_cert` and `server.tls_key` serve HTTPS with: the chain in one PEM
/// file, its private key in the other. A problem names the file.
pub fn server_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, String> {
    let chain = read_pem(cert, "server.tls_cert")?;
    let key_der = rustls::pki_types::PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("server.tls_key {}: no PEM private key could be read ({e})", key.display()))?;
    rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| format!("server.tls_cert and server.tls_key do not make a certificate and its key: {e}"))
}

/// Every certificate in a PEM file, or why there is none.
pub fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    read_pem(path, "tls.ca_file")
}

fn read_pem(path: &Path, key: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let named = |problem: String| format!("{key} {}: {problem}", path.display());
    let bytes = std::fs::read(path).map_err(|e| named(e.to_string()))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| named(format!("not a PEM certificate bundle ({e})")))?;
    if certs.is_empty() {
        return Err(named("holds no PEM certificate".into()));
    }
    Ok(certs)
}

/// Why a connection failed, in words an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectFailure {
    /// The server's certificate chains to no trusted root.
    UnknownAuthority,
    /// The certificate is valid, but not for the host name or address connected to.
    NameMismatch,
    Expired,
    NotYetValid,
    /// The server ended the handshake (a TLS alert, or it closed the connection).
    HandshakeRefused(String),
    /// The peer did not speak TLS, or another TLS failure.
    Tls(String),
    Refused,
    TimedOut,
    HostNotFound,
}

impl ConnectFailure {
    /// Whether the failure is TLS's: a retry cannot help, configuration can.
    pub fn is_tls(&self) -> bool {
        matches!(
            self,
            Self::UnknownAuthority
                | Self::NameMismatch
                | Self::Expired
                | Self::NotYetValid
                | Self::HandshakeRefused(_)
                | Self::Tls(_)
        )
    }

    /// What went wrong, found by walking an error's sources; `None` when nothing in the
    /// chain is a network or TLS failure.
    pub fn diagnose(err: &(dyn std::error::Error + 'static)) -> Option<Self> {
        let mut found = None;
        let mut next = Some(err);
        while let Some(err) = next {
            if let Some(tls) = err.downcast_ref::<rustls::Error>() {
                return Some(Self::from_rustls(tls));
            }
            if let Some(io) = err.downcast_ref::<std::io::Error>() {
                // io::Error's own source() skips the error it wraps: look inside it.
                if let Some(tls) = io.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                    return Some(Self::from_rustls(tls));
                }
                found = found.or_else(|| Self::from_io(io));
            }
            next = err.source();
        }
        found.or_else(|| Self::from_words(&chain_text(err)))
    }

    fn from_rustls(err: &rustls::Error) -> Self {
        use rustls::Error as E;
        match err {
            E::InvalidCertificate(cert) => match cert {
                CertificateError::UnknownIssuer => Self::UnknownAuthority,
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                    Self::NameMismatch
                }
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => Self::Expired,
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => Self::NotYetValid,
                other => Self::Tls(format!("the server's certificate is invalid ({other:?})")),
            },
            E::AlertReceived(alert) => Self::HandshakeRefused(format!("{alert:?}")),
            other => Self::Tls(other.to_string()),
        }
    }

    fn from_io(err: &std::io::Error) -> Option<Self> {
        use std::io::ErrorKind as K;
        Some(match err.kind() {
            K::ConnectionRefused => Self::Refused,
            K::TimedOut => Self::TimedOut,
            K::UnexpectedEof | K::ConnectionReset | K::ConnectionAborted => {
                Self::HandshakeRefused("the server closed the connection".into())
            }
            _ => return None,
        })
    }

    /// The libraries' own words where no typed error is reachable (sqlx keeps some as text).
    fn from_words(text: &str) -> Option<Self> {
        let t = text.to_ascii_lowercase();
        Some(if t.contains("unknownissuer") || t.contains("unknown issuer") {
            Self::UnknownAuthority
        } else if t.contains("notvalidforname") || t.contains("not valid for name") {
            Self::NameMismatch
        } else if t.contains("expired") && t.contains("certificate") {
            Self::Expired
        } else if t.contains("connection refused") {
            Self::Refused
        } else if t.contains("timed out") || t.contains("deadline") {
            Self::TimedOut
        } else if t.contains("dns error") || t.contains("failed to lookup address") || t.contains("name resolution") {
            Self::HostNotFound
        } else if t.contains("tls") || t.contains("handshake") || t.contains("certificate") {
            Self::Tls(text.chars().take(200).collect())
        } else {
            return None;
        })
    }
}

impl fmt::Display for ConnectFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownAuthority => f.write_str(
                "TLS: the server's certificate is signed by an unknown certificate authority \
                 (trust its CA with tls.ca_file, or sslrootcert for PostgreSQL)",
            ),
            Self::NameMismatch => {
                f.write_str("TLS: the server's certificate does not name this host (certificate name mismatch)")
            }
            Self::Expired => f.write_str("TLS: the server's certificate has expired"),
            Self::NotYetValid => f.write_str("TLS: the server's certificate is not valid yet"),
            Self::HandshakeRefused(why) => write!(f, "TLS: the server refused the handshake ({why})"),
            Self::Tls(why) => write!(f, "TLS: {why}"),
            Self::Refused => f.write_str("connection refused (is the server running on that port?)"),
            Self::TimedOut => f.write_str("timed out"),
            Self::HostNotFound => f.write_str("the host name does not resolve"),
        }
    }
}

/// An error and its sources in one line.
pub fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(err) = next {
        let part = err.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = err.source();
    }
    text
}

/// `scheme://host:port` of a URL, for naming an endpoint without its path or secrets.
pub fn endpoint_of(url: &reqwest::Url) -> String {
    let port = url.port_or_known_default().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}", url.scheme(), url.host_str().unwrap_or("?"))
}
