//! `/metrics`, `/healthz`, `/readyz` over loopback.

use std::sync::Arc;
use std::time::Duration;

use controller_kit::Shutdown;
use controller_kit::metrics::ControllerMetrics;
use controller_kit::server::{HealthServer, Readiness};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A minimal HTTP/1.1 GET over loopback; returns (status, body).
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut buf = String::new();
    s.read_to_string(&mut buf).await.unwrap();
    let status = buf.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = buf
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn endpoints_serve_metrics_health_and_settable_readiness() {
    let mut registry = Registry::default();
    let metrics = ControllerMetrics::register(&mut registry, "demo");
    metrics.queue_depth.set(5);
    drop(metrics.reconcile_started());
    let readiness = Readiness::new();
    let server = HealthServer::bind(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(registry),
        readiness.clone(),
    )
    .await
    .unwrap();
    let addr = server.local_addr().unwrap();
    let shutdown = Shutdown::new();
    let task = tokio::spawn(server.serve(shutdown.clone()));

    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(get(addr, "/readyz").await.0, 503);
    readiness.set_ready(true);
    assert_eq!(get(addr, "/readyz").await.0, 200);
    let (status, body) = get(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.contains("demo_queue_depth 5"), "{body}");
    assert!(body.contains("demo_reconciles_total 1"), "{body}");
    assert!(body.contains("# EOF"), "{body}");
    assert_eq!(get(addr, "/nope").await.0, 404);

    shutdown.trigger(controller_kit::ShutdownReason::Requested);
    tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn binding_a_used_port_names_the_address() {
    let first = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = first.local_addr().unwrap();
    let err = HealthServer::bind(addr, Arc::new(Registry::default()), Readiness::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}
