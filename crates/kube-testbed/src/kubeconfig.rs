//! Kubeconfig files the bed writes, and clients read from them.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::error::Error;

/// How a kubeconfig's user authenticates.
pub(crate) enum Credentials<'a> {
    /// A bearer token.
    Token(&'a str),
    /// A client certificate and its key (PEM).
    Certificate { cert_pem: &'a str, key_pem: &'a str },
}

/// A kubeconfig (as JSON) with one cluster, one user and one context.
pub(crate) fn document(
    server: &str,
    ca_pem: &str,
    user: &str,
    credentials: &Credentials<'_>,
    namespace: Option<&str>,
) -> serde_json::Value {
    let user_entry = match credentials {
        Credentials::Token(token) => serde_json::json!({ "token": token }),
        Credentials::Certificate { cert_pem, key_pem } => serde_json::json!({
            "client-certificate-data": STANDARD.encode(cert_pem),
            "client-key-data": STANDARD.encode(key_pem),
        }),
    };
    let mut context = serde_json::json!({ "cluster": "kube-testbed", "user": user });
    if let (Some(namespace), Some(object)) = (namespace, context.as_object_mut()) {
        object.insert("namespace".to_owned(), namespace.into());
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "kube-testbed",
            "cluster": {
                "server": server,
                "certificate-authority-data": STANDARD.encode(ca_pem),
            },
        }],
        "users": [{ "name": user, "user": user_entry }],
        "contexts": [{ "name": format!("{user}@kube-testbed"), "context": context }],
        "current-context": format!("{user}@kube-testbed"),
    })
}

/// Writes `document` as YAML to `path`, readable by its owner only (it
/// holds credentials).
pub(crate) fn write(path: &Path, document: &serde_json::Value) -> Result<(), Error> {
    let yaml = serde_saphyr::to_string(document)
        .map_err(|e| Error::InvalidArgument(format!("cannot write a kubeconfig as YAML: {e}")))?;
    write_private(path, yaml.as_bytes())
}

/// Writes a file readable by its owner only.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let context = || format!("cannot write {}", path.display());
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(context(), e))?;
    file.write_all(bytes).map_err(|e| Error::io(context(), e))
}

/// The client configuration of a kubeconfig file.
pub(crate) async fn config_from_file(path: &Path) -> Result<kube::Config, Error> {
    let kubeconfig = Kubeconfig::read_from(path).map_err(|source| Error::Kubeconfig {
        path: path.to_owned(),
        source,
    })?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|source| Error::Kubeconfig {
            path: path.to_owned(),
            source,
        })
}
