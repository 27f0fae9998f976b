//! The mutating admission webhook of the scheduling-gate queue: it adds
//! [`PREPARE_QUEUE_GATE`] to every data-mover pod at creation, so that
//! kube-scheduler leaves the pod alone until the controller lifts the gate
//! ([`crate::gates`]).
//!
//! - [`mutate`]: the AdmissionReview answer for one request (pure).
//! - [`WebhookTls`]: the serving certificate, from the shared TLS Secret
//!   (made by the first replica with [`WebhookTls::shared`], or an existing
//!   one such as cert-manager's with [`WebhookTls::existing`]); its CA goes
//!   into the webhook configuration's `caBundle`.
//! - [`WebhookServer`]: HTTPS on `POST /mutate`.
//! - [`configuration`]: the MutatingWebhookConfiguration, with a failure
//!   policy that never blocks pod creation (`Ignore`), a namespace selector
//!   narrowed to Velero's namespace, and a short timeout.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::routing::post;
use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use load_soothe::PREPARE_QUEUE_GATE;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::server::TlsStream;

use controller_kit::Shutdown;

use crate::tls_secret::{self, SecretProblem, TlsMaterial};

/// The labels Velero's exposers put on a data-mover pod, one per load kind,
/// whose value is the load's name (L3.15).
pub const MOVER_POD_LABELS: [&str; 4] = [
    "velero.io/data-upload",
    "velero.io/data-download",
    "velero.io/pod-volume-backup",
    "velero.io/pod-volume-restore",
];

/// The webhook's name in the configuration (a qualified name of three
/// segments, as kube-apiserver requires).
pub const WEBHOOK_NAME: &str = "prepare-queue.load-soothe.velero.io";

/// Errors of the webhook's set-up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebhookError {
    /// The certificates could not be made.
    #[error("cannot make the webhook's {what}: {source}")]
    Certificate {
        /// Which certificate or key.
        what: &'static str,
        /// rcgen's error.
        source: rcgen::Error,
    },
    /// The TLS configuration was refused.
    #[error("the webhook's TLS configuration is invalid: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
    /// An API request of the set-up failed.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The client's error.
        source: kube::Error,
    },
    /// The TLS Secret's data is not a usable certificate and key.
    #[error("the webhook's TLS Secret {namespace}/{name}: {problem}; {advice}")]
    Secret {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// Which key is wrong, and how.
        problem: SecretProblem,
        /// What to do about it.
        advice: &'static str,
    },
    /// The TLS Secret does not exist (and is not to be made here).
    #[error("the webhook's TLS Secret {namespace}/{name} does not exist: {why}")]
    SecretMissing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// Why it is not made.
        why: &'static str,
    },
    /// Writing the MutatingWebhookConfiguration was refused (403).
    #[error(
        "cannot write the MutatingWebhookConfiguration {name}: {message}. The generated manifests (`load-soothe-controller manifests --admission pod-gates`) create it and grant `patch` on it by name; apply them, and if --webhook-service or the namespace differ from theirs, rename the configuration and the ClusterRole's resourceNames to <service>-<namespace>"
    )]
    ConfigurationForbidden {
        /// The configuration's name.
        name: String,
        /// kube-apiserver's message.
        message: String,
    },
    /// The listening socket.
    #[error("cannot listen on {addr} for the webhook: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Whether `pod` (a Pod object as JSON) is a data-mover pod: it carries one
/// of [`MOVER_POD_LABELS`].
pub fn is_mover_pod(pod: &Value) -> bool {
    MOVER_POD_LABELS
        .iter()
        .any(|label| pod["metadata"]["labels"][label].is_string())
}

/// The JSON patch that adds the gate to `pod`, `None` when it is not a
/// mover pod, already carries the gate, or names its node: kube-apiserver
/// refuses to create a pod with both `spec.nodeName` and a scheduling gate
/// (L3.16), and Velero's pod-volume exposer creates its hosting pods on the
/// node of the workload's pod that way. Such pods are not held; their loads
/// count against the limit.
pub fn gate_patch(pod: &Value) -> Option<Value> {
    if !is_mover_pod(pod)
        || pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    {
        return None;
    }
    let gate = json!({ "name": PREPARE_QUEUE_GATE });
    match pod["spec"]["schedulingGates"].as_array() {
        Some(gates) if gates.iter().any(|g| g["name"] == PREPARE_QUEUE_GATE) => None,
        Some(_) => Some(json!([{ "op": "add", "path": "/spec/schedulingGates/-", "value": gate }])),
        None => Some(json!([{ "op": "add", "path": "/spec/schedulingGates", "value": [gate] }])),
    }
}

/// The AdmissionReview (`admission.k8s.io/v1`) answering `review`: always
/// allowed; for a mover pod's creation, with the patch of [`gate_patch`].
pub fn mutate(review: &Value) -> Value {
    let request = &review["request"];
    let mut response = json!({
        "uid": request["uid"].clone(),
        "allowed": true,
    });
    if request["operation"] == "CREATE"
        && request["kind"]["kind"] == "Pod"
        && let Some(patch) = gate_patch(&request["object"])
    {
        let encoded = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(encoded);
    }
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    })
}

/// The webhook's serving certificate and the CA that signed it.
#[derive(Clone)]
pub struct WebhookTls {
    material: TlsMaterial,
}

impl std::fmt::Debug for WebhookTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookTls").finish_non_exhaustive()
    }
}

impl WebhookTls {
    /// A new CA and a serving certificate for `names` (DNS names or IP
    /// addresses: the Service's `name.namespace.svc`, or `127.0.0.1`).
    /// Nothing is stored: [`WebhookTls::shared`] stores it.
    pub fn self_signed(names: &[String]) -> Result<WebhookTls, WebhookError> {
        let made = SelfSigned::make(names)?;
        Ok(WebhookTls {
            material: TlsMaterial {
                ca_pem: Some(made.ca_pem),
                chain: vec![CertificateDer::from(made.cert_der)],
                key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.key_der)),
            },
        })
    }

    /// The certificate of a Secret's data in either form
    /// ([`crate::tls_secret`]).
    pub fn from_secret_data(
        data: &BTreeMap<String, ByteString>,
    ) -> Result<WebhookTls, SecretProblem> {
        Ok(WebhookTls {
            material: tls_secret::read(data)?,
        })
    }

    /// The CA certificate (PEM) for the configuration's `caBundle`;
    /// `None` leaves `caBundle` unset (a `kubernetes.io/tls` Secret without
    /// `ca.crt`).
    pub fn ca_pem(&self) -> Option<&str> {
        self.material.ca_pem.as_deref()
    }

    /// The CA and serving certificate every replica shares, kept in the
    /// Secret `name` in `namespace` (the controller's own form, see
    /// [`crate::tls_secret`]): read if it exists (either form), else made
    /// for `names` and created (a replica that loses the creation race
    /// reads the winner's).
    pub async fn shared(
        client: &kube::Client,
        namespace: &str,
        name: &str,
        names: &[String],
    ) -> Result<WebhookTls, WebhookError> {
        let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
        for _ in 0..2 {
            if let Some(secret) = read_secret(&secrets, namespace, name).await? {
                return from_secret(&secret, namespace, name, Provenance::Made);
            }
            let made = SelfSigned::make(names)?;
            let mut secret = Secret::default();
            secret.metadata.name = Some(name.to_owned());
            secret.data = Some(made.secret_data());
            match secrets
                .create(&kube::api::PostParams::default(), &secret)
                .await
            {
                Ok(created) => return from_secret(&created, namespace, name, Provenance::Made),
                Err(kube::Error::Api(status)) if status.code == 409 => continue,
                Err(source) => {
                    return Err(WebhookError::Api {
                        what: format!("cannot create the webhook's TLS Secret {namespace}/{name}"),
                        source,
                    });
                }
            }
        }
        Err(WebhookError::SecretMissing {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            why: "it was created and deleted again while this replica started",
        })
    }

    /// The certificate of the existing Secret `name` in `namespace`
    /// (`--webhook-tls-secret`: cert-manager's, say), never created here.
    pub async fn existing(
        client: &kube::Client,
        namespace: &str,
        name: &str,
    ) -> Result<WebhookTls, WebhookError> {
        let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
        match read_secret(&secrets, namespace, name).await? {
            Some(secret) => from_secret(&secret, namespace, name, Provenance::Given),
            None => Err(WebhookError::SecretMissing {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                why: "--webhook-tls-secret names it, and the controller does not create a Secret it is given (create it, or let cert-manager issue it, first)",
            }),
        }
    }

    fn acceptor(&self) -> Result<TlsAcceptor, WebhookError> {
        use tokio_rustls::rustls::ServerConfig;
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(self.material.chain.clone(), self.material.key.clone_key())?;
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// Where the Secret came from, for the advice in its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Provenance {
    /// Made by a replica of this controller.
    Made,
    /// Named by `--webhook-tls-secret`.
    Given,
}

async fn read_secret(
    secrets: &kube::Api<Secret>,
    namespace: &str,
    name: &str,
) -> Result<Option<Secret>, WebhookError> {
    secrets
        .get_opt(name)
        .await
        .map_err(|source| WebhookError::Api {
            what: format!("cannot read the webhook's TLS Secret {namespace}/{name}"),
            source,
        })
}

fn from_secret(
    secret: &Secret,
    namespace: &str,
    name: &str,
    provenance: Provenance,
) -> Result<WebhookTls, WebhookError> {
    let data = secret.data.clone().unwrap_or_default();
    WebhookTls::from_secret_data(&data).map_err(|problem| WebhookError::Secret {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        problem,
        advice: match provenance {
            Provenance::Made => "delete it to have a new one made",
            Provenance::Given => "fix the Secret (or its cert-manager Certificate)",
        },
    })
}

/// A CA and a serving certificate made by [`SelfSigned::make`].
struct SelfSigned {
    ca_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl SelfSigned {
    /// A new CA (rcgen, ECDSA P-256) and a serving certificate for `names`.
    fn make(names: &[String]) -> Result<SelfSigned, WebhookError> {
        use rcgen::{
            BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
            KeyPair, KeyUsagePurpose,
        };
        let fail = |what| move |source| WebhookError::Certificate { what, source };
        let ca_key = KeyPair::generate().map_err(fail("CA key"))?;
        let mut ca = CertificateParams::default();
        ca.distinguished_name
            .push(DnType::CommonName, "load-soothe-controller webhook CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).map_err(fail("CA certificate"))?;
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().map_err(fail("serving key"))?;
        let mut params = CertificateParams::new(names.to_vec()).map_err(fail("serving names"))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "load-soothe-controller webhook");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(fail("serving certificate"))?;
        Ok(SelfSigned {
            ca_pem: ca_cert.pem(),
            cert_der: cert.der().to_vec(),
            key_der: key.serialize_der(),
        })
    }

    /// The Secret's data in the controller's own form.
    fn secret_data(&self) -> BTreeMap<String, ByteString> {
        [
            (
                tls_secret::CA_CRT.to_owned(),
                ByteString(self.ca_pem.clone().into_bytes()),
            ),
            (
                tls_secret::TLS_CRT_DER.to_owned(),
                ByteString(self.cert_der.clone()),
            ),
            (
                tls_secret::TLS_KEY_DER.to_owned(),
                ByteString(self.key_der.clone()),
            ),
        ]
        .into()
    }
}

/// A TCP listener whose connections are TLS (handshakes time out after
/// 5 s, failed ones are dropped).
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let handshake = self.acceptor.accept(stream);
            match tokio::time::timeout(Duration::from_secs(5), handshake).await {
                Ok(Ok(tls)) => return (tls, addr),
                Ok(Err(error)) => tracing::debug!(%addr, %error, "webhook TLS handshake failed"),
                Err(_) => tracing::debug!(%addr, "webhook TLS handshake timed out"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A bound webhook server; [`WebhookServer::run`] serves until shutdown.
pub struct WebhookServer {
    listener: TlsListener,
}

impl WebhookServer {
    /// Binds `addr` with the certificate of `tls`.
    pub async fn bind(addr: SocketAddr, tls: &WebhookTls) -> Result<WebhookServer, WebhookError> {
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|source| WebhookError::Listen { addr, source })?;
        Ok(WebhookServer {
            listener: TlsListener {
                tcp,
                acceptor: tls.acceptor()?,
            },
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.tcp.local_addr()
    }

    /// Serves `POST /mutate` until `shutdown` fires.
    pub async fn run(self, shutdown: Shutdown) {
        let router = axum::Router::new().route(
            "/mutate",
            post(|Json(review): Json<Value>| async move { Json(mutate(&review)) }),
        );
        let signalled = async move { shutdown.signalled().await };
        if let Err(error) = axum::serve(self.listener, router)
            .with_graceful_shutdown(signalled)
            .await
        {
            tracing::error!(%error, "the webhook server stopped");
        }
    }
}

/// Writes `configuration` with server-side apply (field manager
/// `field_manager`, forced: the CA is this controller's to set). The
/// generated manifests create the configuration and grant only `patch` on
/// it by name: an apply that finds no object would create it, which
/// kube-apiserver authorizes as `create` (refused:
/// [`WebhookError::ConfigurationForbidden`]).
pub async fn apply_configuration(
    client: &kube::Client,
    configuration: &MutatingWebhookConfiguration,
    field_manager: &str,
) -> Result<(), WebhookError> {
    use kube::ResourceExt;
    let api: kube::Api<MutatingWebhookConfiguration> = kube::Api::all(client.clone());
    let name = configuration.name_any();
    api.patch(
        &name,
        &kube::api::PatchParams::apply(field_manager).force(),
        &kube::api::Patch::Apply(configuration),
    )
    .await
    .map_err(|source| match source {
        kube::Error::Api(status) if status.code == 403 => WebhookError::ConfigurationForbidden {
            name: name.clone(),
            message: status.message,
        },
        source => WebhookError::Api {
            what: format!("cannot write the MutatingWebhookConfiguration {name}"),
            source,
        },
    })?;
    Ok(())
}

/// How kube-apiserver reaches the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WebhookEndpoint {
    /// Through a Service (the deployed form): namespace, name, port.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The Service's port.
        port: i32,
    },
    /// A URL (tests on loopback).
    Url(String),
}

/// The MutatingWebhookConfiguration `name`: mover pods created in
/// `velero_namespace` go through the webhook at `endpoint`, trusted with
/// `ca_pem` (`None`: no `caBundle`, so kube-apiserver trusts its system
/// roots, or what another writer such as cert-manager's CA injector puts
/// there). `failurePolicy: Ignore` and a 5 s timeout: when the webhook
/// is down, pods are created without the gate (and count against the limit
/// as soon as their load is in preparation) instead of not at all.
pub fn configuration(
    name: &str,
    velero_namespace: &str,
    endpoint: &WebhookEndpoint,
    ca_pem: Option<&str>,
) -> MutatingWebhookConfiguration {
    let mut client_config = json!({});
    if let Some(ca_pem) = ca_pem {
        client_config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(ca_pem));
    }
    match endpoint {
        WebhookEndpoint::Service {
            namespace,
            name,
            port,
        } => {
            client_config["service"] =
                json!({ "namespace": namespace, "name": name, "path": "/mutate", "port": port });
        }
        WebhookEndpoint::Url(url) => client_config["url"] = json!(url),
    }
    let value = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": { "name": name },
        "webhooks": [{
            "name": WEBHOOK_NAME,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Ignore",
            "timeoutSeconds": 5,
            "reinvocationPolicy": "Never",
            "clientConfig": client_config,
            "namespaceSelector": {
                "matchLabels": { "kubernetes.io/metadata.name": velero_namespace }
            },
            "rules": [{
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }],
        }],
    });
    // The literal above has every field the type needs, in its shape.
    serde_json::from_value(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn review(pod: Value) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
                "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE",
                "object": pod,
            },
        })
    }

    fn patch_of(answer: &Value) -> Option<Value> {
        let encoded = answer["response"]["patch"].as_str()?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    #[test]
    fn a_data_upload_pod_gets_the_gate() {
        let answer = mutate(&review(json!({
            "metadata": {"labels": {"velero.io/data-upload": "du-1"}},
            "spec": {"containers": []},
        })));
        assert_eq!(answer["response"]["allowed"], true);
        assert_eq!(
            answer["response"]["uid"],
            "705ab4f5-6393-11e8-b7cc-42010a800002"
        );
        insta::assert_json_snapshot!(patch_of(&answer), @r#"
        [
          {
            "op": "add",
            "path": "/spec/schedulingGates",
            "value": [
              {
                "name": "velero.io/prepare-queue"
              }
            ]
          }
        ]
        "#);
    }

    #[test]
    fn other_gates_are_kept_and_the_gate_is_not_added_twice() {
        let with_other = json!({
            "metadata": {"labels": {"velero.io/data-download": "dd-1"}},
            "spec": {"schedulingGates": [{"name": "example.com/other"}]},
        });
        assert_eq!(
            gate_patch(&with_other),
            Some(
                json!([{ "op": "add", "path": "/spec/schedulingGates/-", "value": {"name": PREPARE_QUEUE_GATE} }])
            )
        );
        let with_ours = json!({
            "metadata": {"labels": {"velero.io/data-download": "dd-1"}},
            "spec": {"schedulingGates": [{"name": PREPARE_QUEUE_GATE}]},
        });
        assert_eq!(gate_patch(&with_ours), None);
    }

    #[test]
    fn pods_that_are_not_movers_or_name_their_node_are_left_alone() {
        let plain = mutate(&review(
            json!({"metadata": {"labels": {"app": "x"}}, "spec": {}}),
        ));
        assert_eq!(plain["response"]["allowed"], true);
        assert!(plain["response"].get("patch").is_none());
        // Velero's pod-volume exposer pins its hosting pod with nodeName.
        let pinned = json!({
            "metadata": {"labels": {"velero.io/pod-volume-backup": "pvb-1"}},
            "spec": {"nodeName": "node-1"},
        });
        assert_eq!(gate_patch(&pinned), None);
    }

    /// A `kubernetes.io/tls` Secret as cert-manager writes it (serving
    /// certificate and chain in `tls.crt`, `ca.crt`) serves the webhook:
    /// a client trusting only `ca.crt` completes the handshake and gets
    /// the AdmissionReview answer.
    #[tokio::test]
    async fn a_cert_manager_secret_serves_the_webhook() {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio_rustls::rustls;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
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
        let data: BTreeMap<String, ByteString> = [
            ("tls.crt", format!("{}{}", cert.pem(), ca_cert.pem())),
            ("tls.key", key.serialize_pem()),
            ("ca.crt", ca_cert.pem()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), ByteString(v.into_bytes())))
        .collect();
        let tls = WebhookTls::from_secret_data(&data).unwrap();
        assert_eq!(tls.ca_pem(), Some(ca_cert.pem().as_str()));
        let server = WebhookServer::bind("127.0.0.1:0".parse().unwrap(), &tls)
            .await
            .unwrap();
        let addr = server.local_addr().unwrap();
        let shutdown = Shutdown::new();
        tokio::spawn(server.run(shutdown.clone()));

        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca_cert.pem().as_bytes()).unwrap())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let mut stream = connector.connect(name, tcp).await.unwrap();
        let body =
            review(json!({"metadata": {"labels": {"velero.io/data-upload": "du-1"}}, "spec": {}}))
                .to_string();
        let request = format!(
            "POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap_or_default();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("\"patchType\":\"JSONPatch\""), "{answer}");
        shutdown.trigger(controller_kit::ShutdownReason::Requested);
    }

    #[test]
    fn the_configuration_never_blocks_pod_creation() {
        let configuration = configuration(
            "load-soothe-controller",
            "velero",
            &WebhookEndpoint::Service {
                namespace: "velero".into(),
                name: "load-soothe-controller".into(),
                port: 443,
            },
            Some("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n"),
        );
        insta::assert_yaml_snapshot!(configuration);
    }
}
