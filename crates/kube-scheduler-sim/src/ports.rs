//! Host ports as `NodeInfo` and `PodInfo` keep them (`HostPortInfo`,
//! `schedutil.GetHostPorts`): shared vocabulary of the cluster state and the
//! NodePorts plugin.
//!
//! Ports are every `hostPort > 0` of the regular containers and of
//! restartable init containers (sidecars). An empty `hostIP` means
//! `0.0.0.0` and an empty protocol `TCP` (`HostPortInfo`'s `sanitize`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod};

/// The address that binds every host IP.
pub const BIND_ALL: &str = "0.0.0.0";

/// A host port, sanitised: IP `0.0.0.0` and protocol `TCP` when unset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// Host IP (`0.0.0.0` = all).
    pub ip: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The port number (> 0).
    pub port: i32,
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{} on {}", self.port, self.protocol, self.ip)
    }
}

/// `GetHostPorts`: the pod's host ports, sanitised, in container order
/// (sidecar init containers first).
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    sidecars
        .chain(spec.containers.iter())
        .flat_map(|c: &Container| c.ports.iter().flatten())
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| HostPort {
            ip: p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| BIND_ALL.to_owned()),
            protocol: p
                .protocol
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "TCP".to_owned()),
            port: p.host_port.unwrap_or_default(),
        })
        .collect()
}

/// The host ports in use on a node (`NodeInfo.UsedPorts`), counted per pod
/// so that removing one of two pods using a port keeps it in use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsedPorts(BTreeMap<HostPort, u32>);

impl UsedPorts {
    /// Adds (`add`) or removes a pod's ports.
    pub fn update(&mut self, ports: &[HostPort], add: bool) {
        for p in ports {
            if add {
                *self.0.entry(p.clone()).or_default() += 1;
            } else if let Some(n) = self.0.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    self.0.remove(p);
                }
            }
        }
    }

    /// `HostPortInfo.CheckConflict`: the used port `wanted` collides with,
    /// if any.
    pub fn conflict(&self, wanted: &HostPort) -> Option<&HostPort> {
        self.0.keys().find(|used| {
            used.protocol == wanted.protocol
                && used.port == wanted.port
                && (wanted.ip == BIND_ALL || used.ip == BIND_ALL || used.ip == wanted.ip)
        })
    }

    /// Whether no port is in use.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
