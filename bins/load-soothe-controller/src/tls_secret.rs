//! The webhook's TLS Secret as the controller reads it, in either of two
//! forms (told apart by their keys):
//!
//! - **`kubernetes.io/tls`**, as cert-manager (and `kubectl create secret
//!   tls`) writes it: `tls.crt`, the PEM serving certificate followed by
//!   its chain; `tls.key`, its PEM private key (PKCS#8 `PRIVATE KEY`,
//!   PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY`); and, optionally,
//!   `ca.crt`, the PEM CA that kube-apiserver should trust. Without
//!   `ca.crt` no `caBundle` is written (kube-apiserver then trusts its
//!   system roots, or whatever cert-manager's CA injector writes);
//! - **the controller's own**, which it creates when no Secret exists:
//!   `ca.crt` (PEM), `tls.crt.der` and `tls.key.der` (PKCS#8 DER).
//!
//! [`read`] is pure: it parses the Secret's data and checks that the key
//! belongs to the certificate, naming the key of the Secret that is wrong.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// `kubernetes.io/tls`: the serving certificate and its chain (PEM).
pub const TLS_CRT: &str = "tls.crt";
/// `kubernetes.io/tls`: the private key (PEM).
pub const TLS_KEY: &str = "tls.key";
/// The CA certificate (PEM), both forms; optional in `kubernetes.io/tls`.
pub const CA_CRT: &str = "ca.crt";
/// The controller's own form: the serving certificate (DER).
pub const TLS_CRT_DER: &str = "tls.crt.der";
/// The controller's own form: the private key (PKCS#8 DER).
pub const TLS_KEY_DER: &str = "tls.key.der";

/// What is wrong with one key of the Secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{key} {problem}")]
pub struct SecretProblem {
    /// The key of the Secret's data (`tls.crt`, `tls.key`, `ca.crt`, ...).
    pub key: &'static str,
    /// What is wrong with its value.
    pub problem: String,
}

impl SecretProblem {
    fn new(key: &'static str, problem: impl Into<String>) -> SecretProblem {
        SecretProblem {
            key,
            problem: problem.into(),
        }
    }
}

/// The serving certificate chain, its key, and the CA for the `caBundle`.
#[derive(Debug)]
pub struct TlsMaterial {
    /// The CA (PEM) to write as the webhook configuration's `caBundle`;
    /// `None`: leave `caBundle` unset.
    pub ca_pem: Option<String>,
    /// The serving certificate first, then its chain (DER).
    pub chain: Vec<CertificateDer<'static>>,
    /// The serving certificate's private key.
    pub key: PrivateKeyDer<'static>,
}

impl Clone for TlsMaterial {
    fn clone(&self) -> TlsMaterial {
        TlsMaterial {
            ca_pem: self.ca_pem.clone(),
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// Which form the Secret is in, from its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretForm {
    /// `tls.crt`, `tls.key`, optional `ca.crt` (PEM).
    KubernetesTls,
    /// `ca.crt` (PEM), `tls.crt.der`, `tls.key.der`.
    ControllerDer,
}

/// The form of a Secret with these keys: `tls.crt` means
/// `kubernetes.io/tls`, else `tls.crt.der` means the controller's own.
pub fn form(data: &BTreeMap<String, ByteString>) -> Result<SecretForm, SecretProblem> {
    if data.contains_key(TLS_CRT) {
        Ok(SecretForm::KubernetesTls)
    } else if data.contains_key(TLS_CRT_DER) {
        Ok(SecretForm::ControllerDer)
    } else {
        let mut keys: Vec<&str> = data.keys().map(String::as_str).collect();
        keys.sort_unstable();
        Err(SecretProblem::new(
            TLS_CRT,
            format!(
                "is missing: expected tls.crt and tls.key (PEM, as cert-manager writes them, optionally ca.crt) or this controller's ca.crt, tls.crt.der and tls.key.der; the Secret has {}",
                if keys.is_empty() {
                    "no data".to_owned()
                } else {
                    keys.join(", ")
                }
            ),
        ))
    }
}

/// Reads the Secret's data (either form) and checks that the private key
/// is the serving certificate's.
pub fn read(data: &BTreeMap<String, ByteString>) -> Result<TlsMaterial, SecretProblem> {
    let value = |key: &'static str| {
        data.get(key)
            .map(|b| b.0.as_slice())
            .ok_or_else(|| SecretProblem::new(key, "is missing"))
    };
    let form = form(data)?;
    let material = match form {
        SecretForm::KubernetesTls => TlsMaterial {
            chain: pem_certificates(TLS_CRT, value(TLS_CRT)?)?,
            key: pem_key(value(TLS_KEY)?)?,
            ca_pem: match data.get(CA_CRT) {
                Some(ca) => Some(ca_pem(&ca.0)?),
                None => None,
            },
        },
        SecretForm::ControllerDer => TlsMaterial {
            ca_pem: Some(ca_pem(value(CA_CRT)?)?),
            chain: vec![CertificateDer::from(value(TLS_CRT_DER)?.to_vec())],
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(value(TLS_KEY_DER)?.to_vec())),
        },
    };
    let keys = match form {
        SecretForm::KubernetesTls => (TLS_CRT, TLS_KEY),
        SecretForm::ControllerDer => (TLS_CRT_DER, TLS_KEY_DER),
    };
    check_key_matches(&material, keys)?;
    Ok(material)
}

/// The certificates of a PEM bundle (at least one).
fn pem_certificates(
    key: &'static str,
    bytes: &[u8],
) -> Result<Vec<CertificateDer<'static>>, SecretProblem> {
    let certificates = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SecretProblem::new(key, format!("is not valid PEM: {}", pem_error(&e))))?;
    if certificates.is_empty() {
        return Err(SecretProblem::new(
            key,
            "is not PEM: it holds no -----BEGIN CERTIFICATE----- block",
        ));
    }
    Ok(certificates)
}

/// The private key of a PEM value (the first key block).
fn pem_key(bytes: &[u8]) -> Result<PrivateKeyDer<'static>, SecretProblem> {
    PrivateKeyDer::from_pem_slice(bytes).map_err(|e| match e {
        pem::Error::NoItemsFound => SecretProblem::new(
            TLS_KEY,
            "is not PEM: it holds no PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY block",
        ),
        other => SecretProblem::new(TLS_KEY, format!("is not valid PEM: {}", pem_error(&other))),
    })
}

/// `ca.crt` checked to hold PEM certificates, as text.
fn ca_pem(bytes: &[u8]) -> Result<String, SecretProblem> {
    pem_certificates(CA_CRT, bytes)?;
    String::from_utf8(bytes.to_vec())
        .map_err(|_| SecretProblem::new(CA_CRT, "is not PEM: it is not UTF-8 text"))
}

fn pem_error(error: &pem::Error) -> String {
    match error {
        pem::Error::MissingSectionEnd { end_marker } => {
            let label = String::from_utf8_lossy(end_marker);
            format!("its {label} block has no -----END {label}----- line (truncated?)")
        }
        pem::Error::IllegalSectionStart { line } => {
            format!("malformed BEGIN line {:?}", String::from_utf8_lossy(line))
        }
        pem::Error::Base64Decode(message) => format!("bad base64 in a block: {message}"),
        other => format!("{other:?}"),
    }
}

/// The key parses, and its public key is the serving certificate's.
/// `keys`: the certificate's and the key's names in the Secret.
fn check_key_matches(
    material: &TlsMaterial,
    (cert_key, key_key): (&'static str, &'static str),
) -> Result<(), SecretProblem> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    match rustls::sign::CertifiedKey::from_der(
        material.chain.clone(),
        material.key.clone_key(),
        &provider,
    ) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
            Err(SecretProblem::new(
                key_key,
                format!("does not match the certificate of {cert_key}: their public keys differ"),
            ))
        }
        Err(rustls::Error::InvalidCertificate(error)) => Err(SecretProblem::new(
            cert_key,
            format!("holds a serving certificate that cannot be read: {error}"),
        )),
        Err(error) => Err(SecretProblem::new(
            key_key,
            format!("holds a private key that cannot be used: {error}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};

    /// A CA and a serving certificate for `127.0.0.1` it signed, as PEM:
    /// (CA certificate, serving certificate, serving key).
    fn issued() -> (String, String, String) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::default();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        (ca_cert.pem(), cert.pem(), key.serialize_pem())
    }

    fn data(entries: &[(&str, &[u8])]) -> BTreeMap<String, ByteString> {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), ByteString(v.to_vec())))
            .collect()
    }

    #[test]
    fn a_cert_manager_secret_is_read_and_its_ca_becomes_the_bundle() {
        let (ca, cert, key) = issued();
        // cert-manager puts the chain after the serving certificate.
        let chain = format!("{cert}{ca}");
        let material = read(&data(&[
            (TLS_CRT, chain.as_bytes()),
            (TLS_KEY, key.as_bytes()),
            (CA_CRT, ca.as_bytes()),
        ]))
        .unwrap();
        assert_eq!(material.ca_pem.as_deref(), Some(ca.as_str()));
        assert_eq!(material.chain.len(), 2);
        assert_eq!(
            material.chain[0].as_ref(),
            CertificateDer::from_pem_slice(cert.as_bytes())
                .unwrap()
                .as_ref()
        );
    }

    #[test]
    fn without_ca_crt_no_bundle_is_written() {
        let (_, cert, key) = issued();
        let material = read(&data(&[
            (TLS_CRT, cert.as_bytes()),
            (TLS_KEY, key.as_bytes()),
        ]))
        .unwrap();
        assert_eq!(material.ca_pem, None);
    }

    #[test]
    fn the_controllers_own_der_form_is_still_read() {
        let (ca, cert, key) = issued();
        let cert_der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let key_der = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
        let material = read(&data(&[
            (CA_CRT, ca.as_bytes()),
            (TLS_CRT_DER, cert_der.as_ref()),
            (TLS_KEY_DER, key_der.secret_der()),
        ]))
        .unwrap();
        assert_eq!(material.ca_pem.as_deref(), Some(ca.as_str()));
        assert_eq!(material.chain, vec![cert_der]);
    }

    /// Each problem names the key of the Secret and what is wrong with it.
    #[test]
    fn problems_name_the_key_and_what_is_wrong() {
        let (ca, cert, key) = issued();
        let (_, _, other_key) = issued();
        let cert_der = CertificateDer::from_pem_slice(cert.as_bytes()).unwrap();
        let truncated = &cert[..cert.len() - 30];
        let cases: Vec<(&str, BTreeMap<String, ByteString>)> = vec![
            (
                "no known key",
                data(&[("cert.pem", cert.as_bytes()), ("key.pem", key.as_bytes())]),
            ),
            ("empty Secret", data(&[])),
            (
                "DER in tls.crt",
                data(&[(TLS_CRT, cert_der.as_ref()), (TLS_KEY, key.as_bytes())]),
            ),
            ("tls.key missing", data(&[(TLS_CRT, cert.as_bytes())])),
            (
                "a certificate in tls.key",
                data(&[(TLS_CRT, cert.as_bytes()), (TLS_KEY, cert.as_bytes())]),
            ),
            (
                "truncated tls.crt",
                data(&[(TLS_CRT, truncated.as_bytes()), (TLS_KEY, key.as_bytes())]),
            ),
            (
                "another certificate's key",
                data(&[(TLS_CRT, cert.as_bytes()), (TLS_KEY, other_key.as_bytes())]),
            ),
            (
                "a key in ca.crt",
                data(&[
                    (TLS_CRT, cert.as_bytes()),
                    (TLS_KEY, key.as_bytes()),
                    (CA_CRT, key.as_bytes()),
                ]),
            ),
            (
                "own form without ca.crt",
                data(&[
                    (TLS_CRT_DER, cert_der.as_ref()),
                    (TLS_KEY_DER, b"x".as_slice()),
                ]),
            ),
            (
                "own form with a broken key",
                data(&[
                    (CA_CRT, ca.as_bytes()),
                    (TLS_CRT_DER, cert_der.as_ref()),
                    (TLS_KEY_DER, b"not a key".as_slice()),
                ]),
            ),
        ];
        let report: Vec<String> = cases
            .iter()
            .map(|(what, data)| match read(data) {
                Ok(_) => format!("{what}: accepted"),
                Err(problem) => format!("{what}: {problem}"),
            })
            .collect();
        insta::assert_snapshot!(report.join("\n"));
    }
}
