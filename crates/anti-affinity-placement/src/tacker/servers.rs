//! OpenStack's server list (`openstack server list --long -f json`) as a
//! host source (E.8): each server's compute host, and the Node each server
//! is, found by address (else by name), so that host labels follow live
//! migrations instead of being written once.

use std::collections::BTreeMap;

use serde_json::Value;

use super::plan::Server;

/// Why a server list could not be read. Names the entry and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerListError {
    /// Not JSON.
    #[error("not JSON: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// The document is not a list of objects.
    #[error("{path}: expected {expected}, found {found}")]
    Shape {
        /// `[3]` or `[3]."Host"`.
        path: String,
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// An entry has no `Name`.
    #[error(
        "[{index}]: no \"Name\": the list must come from `openstack server list --long -f json`"
    )]
    NoName {
        /// The entry.
        index: usize,
    },
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(text) => format!("{text:?}"),
        Value::Array(items) => format!("a list of {}", items.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn text(
    entry: &serde_json::Map<String, Value>,
    index: usize,
    keys: &[&str],
) -> Result<Option<String>, ServerListError> {
    for key in keys {
        match entry.get(*key) {
            None | Some(Value::Null) => {}
            Some(Value::String(value)) => return Ok(Some(value.clone())),
            Some(other) => {
                return Err(ServerListError::Shape {
                    path: format!("[{index}].{key:?}"),
                    expected: "a string",
                    found: kind(other),
                });
            }
        }
    }
    Ok(None)
}

/// Reads `openstack server list --long -f json`: `Name`, `Host` (or
/// `OS-EXT-SRV-ATTR:host`), and the IPv4 addresses of `Networks` (a
/// mapping of network to addresses, or the `net=ip, ip` text of older
/// clients).
pub fn servers_from_listing(listing: &str) -> Result<Vec<Server>, ServerListError> {
    let document: Value =
        serde_json::from_str(listing).map_err(|error| ServerListError::Syntax {
            message: error.to_string(),
        })?;
    let Value::Array(entries) = document else {
        return Err(ServerListError::Shape {
            path: "the document".to_owned(),
            expected: "the JSON list `openstack server list -f json` writes",
            found: kind(&document),
        });
    };
    let mut servers = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let Value::Object(entry) = entry else {
            return Err(ServerListError::Shape {
                path: format!("[{index}]"),
                expected: "an object",
                found: kind(entry),
            });
        };
        let name =
            text(entry, index, &["Name", "name"])?.ok_or(ServerListError::NoName { index })?;
        let host = text(entry, index, &["Host", "OS-EXT-SRV-ATTR:host"])?;
        let mut addresses: Vec<String> = Vec::new();
        match entry.get("Networks") {
            Some(Value::Object(networks)) => {
                for list in networks.values() {
                    if let Value::Array(ips) = list {
                        addresses.extend(ips.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                }
            }
            Some(Value::String(written)) => {
                for part in written.split([',', ';']) {
                    let ip = part.rsplit('=').next().unwrap_or(part).trim();
                    addresses.push(ip.to_owned());
                }
            }
            _ => {}
        }
        servers.push(Server {
            name,
            host,
            ipv4: addresses
                .into_iter()
                .filter(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
                .collect(),
            zone: None,
        });
    }
    Ok(servers)
}

/// A Node's `status.addresses`, of any type.
pub fn node_addresses(node: &k8s_openapi::api::core::v1::Node) -> Vec<String> {
    node.status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .into_iter()
        .flatten()
        .map(|a| a.address.clone())
        .collect()
}

/// Node name → compute host: the server holding one of the Node's
/// addresses, else the server named as the Node. `nodes` gives each Node's
/// name and `status.addresses`.
pub fn hosts_of_nodes<'a>(
    servers: &[Server],
    nodes: impl IntoIterator<Item = (&'a str, Vec<String>)>,
) -> BTreeMap<String, String> {
    nodes
        .into_iter()
        .filter_map(|(node, addresses)| {
            let server = servers
                .iter()
                .find(|s| s.ipv4.iter().any(|ip| addresses.contains(ip)))
                .or_else(|| servers.iter().find(|s| s.name == node))?;
            Some((node.to_owned(), server.host.clone()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = r#"[
      {"ID": "1", "Name": "workerNode-0", "Host": "compute-b", "Networks": {"net0": ["10.10.0.45", "fd00::45"]}},
      {"ID": "2", "Name": "k8s-worker-2", "OS-EXT-SRV-ATTR:host": "compute-c", "Networks": "net0=10.10.0.46"},
      {"ID": "3", "Name": "shelved", "Host": null, "Networks": {}}
    ]"#;

    #[test]
    fn a_listing_gives_each_server_its_host_and_ipv4_addresses() {
        let servers = servers_from_listing(LISTING).unwrap();
        assert_eq!(servers.len(), 3);
        assert_eq!(servers[0].host.as_deref(), Some("compute-b"));
        assert_eq!(servers[0].ipv4, ["10.10.0.45"]);
        assert_eq!(servers[1].host.as_deref(), Some("compute-c"));
        assert_eq!(servers[1].ipv4, ["10.10.0.46"]);
        assert_eq!(servers[2].host, None);
    }

    #[test]
    fn a_node_is_its_server_by_address_before_by_name() {
        let servers = servers_from_listing(LISTING).unwrap();
        let hosts = hosts_of_nodes(
            &servers,
            [
                // Tacker's guess of the name, and the server's address.
                ("worker45", vec!["10.10.0.45".to_owned()]),
                // Named as its server, no address known.
                ("k8s-worker-2", Vec::new()),
                // A server without a host, and a Node no server is.
                ("shelved", Vec::new()),
                ("other", vec!["10.9.9.9".to_owned()]),
            ],
        );
        assert_eq!(
            hosts,
            BTreeMap::from([
                ("k8s-worker-2".to_owned(), "compute-c".to_owned()),
                ("worker45".to_owned(), "compute-b".to_owned()),
            ])
        );
    }

    #[test]
    fn errors_name_the_entry_and_the_field() {
        assert_eq!(
            servers_from_listing(r#"[{"Host": "c"}]"#)
                .unwrap_err()
                .to_string(),
            "[0]: no \"Name\": the list must come from `openstack server list --long -f json`"
        );
        assert_eq!(
            servers_from_listing(r#"[{"Name": "a", "Host": ["c"]}]"#)
                .unwrap_err()
                .to_string(),
            "[0].\"Host\": expected a string, found a list of 1"
        );
        assert!(
            servers_from_listing(r#"{"Name": "a"}"#)
                .unwrap_err()
                .to_string()
                .starts_with("the document: expected the JSON list")
        );
    }
}
