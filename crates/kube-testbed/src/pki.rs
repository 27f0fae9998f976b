//! The keys and certificates a bed generates when it starts: one CA that
//! signs the serving certificates and the client certificates, the
//! service-account signing key, and random tokens.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SigningKey,
};

use crate::error::Error;

/// A PEM certificate and its PEM (PKCS#8) private key.
pub(crate) struct CertAndKey {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// The bed's certificate authority.
pub(crate) struct Pki {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki").finish_non_exhaustive()
    }
}

impl Pki {
    /// A new CA (ECDSA P-256), valid from now.
    pub(crate) fn new() -> Result<Pki, Error> {
        let key = KeyPair::generate().map_err(|e| Error::certificate("the CA key", e))?;
        let mut params = CertificateParams::default();
        params.distinguished_name.remove(DnType::CommonName);
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-testbed-ca");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params
            .self_signed(&key)
            .map_err(|e| Error::certificate("the CA certificate", e))?;
        Ok(Pki {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// The CA certificate (PEM).
    pub(crate) fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The CA's private key (PEM), for kube-controller-manager's
    /// certificate signer.
    pub(crate) fn ca_key_pem(&self) -> String {
        self.issuer.key().serialize_pem()
    }

    /// A serving certificate for 127.0.0.1, ::1 and localhost.
    pub(crate) fn serving(&self, common_name: &str) -> Result<CertAndKey, Error> {
        let what = || format!("the serving certificate of {common_name}");
        let mut params = CertificateParams::new(vec![
            "127.0.0.1".to_owned(),
            "::1".to_owned(),
            "localhost".to_owned(),
        ])
        .map_err(|e| Error::certificate(what(), e))?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params, &what)
    }

    /// A client certificate for `user` (the subject's common name) in
    /// `groups` (one organization each), as kube-apiserver's
    /// client-certificate authenticator reads them.
    pub(crate) fn client(&self, user: &str, groups: &[&str]) -> Result<CertAndKey, Error> {
        let what = || format!("the client certificate of {user}");
        let mut groups: Vec<&str> = groups.to_vec();
        groups.dedup();
        if groups.len() > MAX_GROUPS {
            return Err(Error::InvalidArgument(format!(
                "{}: at most {MAX_GROUPS} groups, not {}",
                what(),
                groups.len()
            )));
        }
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, user);
        // rcgen keeps one value per attribute type, so the second and
        // later groups get placeholder types, replaced by the organization
        // type afterwards (see `organizations`).
        for (index, group) in groups.iter().enumerate() {
            params.distinguished_name.push(
                group_attribute(index),
                DnValue::Utf8String((*group).to_owned()),
            );
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let signed = self.sign(params, &what)?;
        if groups.len() < 2 {
            return Ok(signed);
        }
        let der = pem_decode(&signed.cert_pem).ok_or_else(|| {
            Error::InvalidArgument(format!("{}: rcgen wrote PEM that does not decode", what()))
        })?;
        let der = self
            .organizations(&der, &groups)
            .map_err(|problem| Error::InvalidArgument(format!("{}: {problem}", what())))?;
        Ok(CertAndKey {
            cert_pem: pem_encode("CERTIFICATE", &der),
            key_pem: signed.key_pem,
        })
    }

    /// Turns the placeholder attributes of `groups` (all but the first) in
    /// the subject of `der` into organizations, and signs it again.
    fn organizations(&self, der: &[u8], groups: &[&str]) -> Result<Vec<u8>, String> {
        // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
        let (content, _) = der_element(der, 0x30).ok_or("not a DER certificate")?;
        let (tbs, rest) = split_element(content, 0x30).ok_or("no tbsCertificate")?;
        let (algorithm, _) = split_element(rest, 0x30).ok_or("no signatureAlgorithm")?;
        let mut tbs = tbs.to_vec();
        for (index, group) in groups.iter().enumerate().skip(1) {
            // SEQUENCE { OID 2.5.4.<placeholder>, UTF8String group }: each
            // occurs once; the OID's last byte becomes 10 (organizationName),
            // which keeps every length.
            let mut pattern = vec![0x06, 0x03, 0x55, 0x04, placeholder(index), 0x0c];
            pattern.extend(der_length(group.len()));
            pattern.extend(group.as_bytes());
            let found: Vec<usize> = tbs
                .windows(pattern.len())
                .enumerate()
                .filter(|(_, window)| *window == pattern.as_slice())
                .map(|(at, _)| at)
                .collect();
            let [at] = found.as_slice() else {
                return Err(format!(
                    "group {group:?} is in the subject {} times",
                    found.len()
                ));
            };
            tbs[at + 4] = 0x0a;
        }
        let signature = self
            .issuer
            .key()
            .sign(&tbs)
            .map_err(|e| format!("cannot sign: {e}"))?;
        let mut bit_string = vec![0x00];
        bit_string.extend(signature);
        let mut body = tbs;
        body.extend(algorithm);
        body.extend(der_encode(0x03, &bit_string));
        Ok(der_encode(0x30, &body))
    }

    fn sign(
        &self,
        mut params: CertificateParams,
        what: &dyn Fn() -> String,
    ) -> Result<CertAndKey, Error> {
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().map_err(|e| Error::certificate(what(), e))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| Error::certificate(what(), e))?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The key pair that signs service-account tokens: (private PEM, public PEM).
pub(crate) fn service_account_key() -> Result<(String, String), Error> {
    let key = KeyPair::generate().map_err(|e| Error::certificate("the service-account key", e))?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}

/// `bytes` random bytes as lowercase hex.
pub(crate) fn random_hex(bytes: usize, what: &'static str) -> Result<String, Error> {
    let mut buf = vec![0_u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| Error::Random {
        what,
        detail: e.to_string(),
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// The most groups a client certificate carries (placeholder attribute
/// types 2.5.4.100 to 2.5.4.127 keep a one-byte encoding).
const MAX_GROUPS: usize = 28;

/// The attribute type of the `index`th group: organizationName for the
/// first, a placeholder for the others.
fn group_attribute(index: usize) -> DnType {
    if index == 0 {
        DnType::OrganizationName
    } else {
        DnType::CustomDnType(vec![2, 5, 4, u64::from(placeholder(index))])
    }
}

fn placeholder(index: usize) -> u8 {
    // `index` is below MAX_GROUPS, so this stays below 128.
    100_u8.saturating_add(u8::try_from(index).unwrap_or(u8::MAX))
}

/// A DER length.
fn der_length(length: usize) -> Vec<u8> {
    if length < 0x80 {
        // Below 0x80: fits the short form.
        vec![length as u8]
    } else {
        let bytes: Vec<u8> = length
            .to_be_bytes()
            .into_iter()
            .skip_while(|byte| *byte == 0)
            .collect();
        let mut encoded = vec![0x80 | bytes.len() as u8];
        encoded.extend(bytes);
        encoded
    }
}

/// A DER element of `tag` with `content`.
fn der_encode(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut encoded = vec![tag];
    encoded.extend(der_length(content.len()));
    encoded.extend(content);
    encoded
}

/// The content of the DER element of `tag` at the start of `input`, and
/// what follows it.
fn der_element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = input.split_first()?;
    if first != tag {
        return None;
    }
    let (&length_byte, rest) = rest.split_first()?;
    let (length, rest) = if length_byte < 0x80 {
        (usize::from(length_byte), rest)
    } else {
        let count = usize::from(length_byte & 0x7f);
        if count == 0 || count > std::mem::size_of::<usize>() || rest.len() < count {
            return None;
        }
        let (bytes, rest) = rest.split_at(count);
        let length = bytes
            .iter()
            .fold(0_usize, |length, byte| (length << 8) | usize::from(*byte));
        (length, rest)
    };
    if rest.len() < length {
        return None;
    }
    Some(rest.split_at(length))
}

/// The whole DER element of `tag` (header included) at the start of
/// `input`, and what follows it.
fn split_element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (content, rest) = der_element(input, tag)?;
    let whole = input.len() - rest.len();
    debug_assert!(whole >= content.len());
    Some(input.split_at(whole))
}

fn pem_decode(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    STANDARD.decode(body.trim()).ok()
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    let encoded = STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_lengths_use_the_short_and_the_long_form() {
        assert_eq!(der_length(5), [5]);
        assert_eq!(der_length(127), [127]);
        assert_eq!(der_length(128), [0x81, 128]);
        assert_eq!(der_length(300), [0x82, 1, 44]);
        let element = der_encode(0x04, &[7; 300]);
        let (content, rest) = der_element(&element, 0x04).unwrap();
        assert_eq!((content.len(), rest.len()), (300, 0));
    }

    #[test]
    fn every_group_becomes_an_organization_of_a_certificate_the_ca_signed() {
        let pki = Pki::new().unwrap();
        let groups = ["team-a", "team-b", "system:auditors"];
        let cert = pki.client("alice", &groups).unwrap();
        let der = pem_decode(&cert.cert_pem).unwrap();
        // organizationName (2.5.4.10) once per group, no placeholder left.
        for group in groups {
            let mut attribute = vec![0x06, 0x03, 0x55, 0x04, 0x0a, 0x0c, group.len() as u8];
            attribute.extend(group.as_bytes());
            assert!(
                der.windows(attribute.len()).any(|w| w == attribute),
                "{group}"
            );
        }
        for index in 1..groups.len() {
            let placeholder_oid = [0x06, 0x03, 0x55, 0x04, placeholder(index)];
            assert!(!der.windows(5).any(|w| w == placeholder_oid));
        }
        // The signature verifies with the CA's key.
        let (content, _) = der_element(&der, 0x30).unwrap();
        let (tbs, rest) = split_element(content, 0x30).unwrap();
        let (_, rest) = split_element(rest, 0x30).unwrap();
        let (signature, _) = der_element(rest, 0x03).unwrap();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_ASN1,
            pki.issuer.key().public_key_raw(),
        );
        public.verify(tbs, &signature[1..]).unwrap();
    }
}
