//! The `HostInventory` document: hosts, anti-affinity groups and VMs as a
//! user writes them (YAML or JSON). Nothing here is validated yet; see
//! [`super::CheckedInventory::new`] for the checks and their messages.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The only accepted `apiVersion`.
pub const API_VERSION: &str = "policyctl/v1alpha1";
/// The only accepted `kind`.
pub const KIND: &str = "HostInventory";

/// Physical hosts, anti-affinity groups and the VMs to spread over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostInventory {
    /// Must be [`API_VERSION`].
    pub api_version: String,
    /// Must be [`KIND`].
    pub kind: String,
    /// Physical hosts (ESXi hosts, compute servers).
    #[serde(default)]
    pub hosts: Vec<Host>,
    /// Anti-affinity groups (one per MachineDeployment or control plane).
    #[serde(default)]
    pub groups: Vec<Group>,
    /// Virtual machines; the ones without `host` are placed by the plan, in
    /// list order.
    #[serde(default)]
    pub vms: Vec<Vm>,
}

impl HostInventory {
    /// An empty inventory with the right `apiVersion` and `kind`.
    pub fn new() -> Self {
        Self {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            hosts: Vec::new(),
            groups: Vec::new(),
            vms: Vec::new(),
        }
    }

    /// Node name → host name for every VM that has a host: the host
    /// information source for labels when VM names are node names (B.1).
    pub fn host_of_vm(&self) -> BTreeMap<String, String> {
        self.vms
            .iter()
            .filter_map(|vm| Some((vm.name.clone(), vm.host.clone()?)))
            .collect()
    }
}

impl Default for HostInventory {
    fn default() -> Self {
        Self::new()
    }
}

/// One physical host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Host {
    /// Unique host name.
    pub name: String,
    /// Capacity per resource name (any names; a resource a host does not list
    /// has capacity 0 there).
    #[serde(default)]
    pub capacity: BTreeMap<String, Amount>,
    /// A host in maintenance (or cordoned) is never chosen (SA7); its VMs
    /// still count and are evacuated by the rebalance planner.
    #[serde(default)]
    pub maintenance: bool,
}

/// An anti-affinity group: the VMs that should not share a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Group {
    /// Unique group name (typically the MachineDeployment name).
    pub name: String,
    /// Soft (default) or hard anti-affinity.
    #[serde(default)]
    pub policy: Policy,
    /// Hard anti-affinity only: at most this many VMs of the group (or its
    /// set) per host; default 1 (A.12).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_host: Option<u32>,
    /// Groups naming the same set are counted together (A.11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity_set: Option<String>,
}

/// Anti-affinity policy of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Policy {
    /// Spread as far as possible, never block (A.10, SA1–SA7).
    #[default]
    #[serde(rename = "soft-anti-affinity")]
    SoftAntiAffinity,
    /// At most `maxPerHost` per host, otherwise leave the VM unplaced (A.12).
    #[serde(rename = "anti-affinity")]
    AntiAffinity,
}

/// One virtual machine (a Cluster API Machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vm {
    /// Unique VM name (the Machine name, which is also the Node name).
    pub name: String,
    /// Name of the group the VM belongs to.
    pub group: String,
    /// Requested amount per resource name (absent = 0).
    #[serde(default)]
    pub requests: BTreeMap<String, Amount>,
    /// Current host. Present = placed; the plan never moves it (SA6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A resource amount as written: an integer or a Kubernetes-style quantity
/// string with an integer mantissa (`"128Gi"`, `"4k"`, `"32"`). Validation
/// turns it into a non-negative integer or an error naming the field.
#[derive(Debug, Clone, PartialEq)]
pub enum Amount {
    /// A plain number (negative numbers are kept so they can be reported).
    Integer(i128),
    /// A number with a fractional part (always rejected by validation).
    Fraction(f64),
    /// A quantity string.
    Text(String),
}

impl From<u64> for Amount {
    fn from(value: u64) -> Self {
        Amount::Integer(i128::from(value))
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Integer(n) => write!(f, "{n}"),
            Amount::Fraction(x) => write!(f, "{x}"),
            Amount::Text(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Amount::Integer(n) => {
                if let Ok(v) = u64::try_from(*n) {
                    serializer.serialize_u64(v)
                } else if let Ok(v) = i64::try_from(*n) {
                    serializer.serialize_i64(v)
                } else {
                    serializer.serialize_str(&n.to_string())
                }
            }
            Amount::Fraction(x) => serializer.serialize_f64(*x),
            Amount::Text(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct AmountVisitor;
        impl Visitor<'_> for AmountVisitor {
            type Value = Amount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a quantity string such as \"128Gi\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Amount, E> {
                Ok(Amount::Integer(i128::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Amount, E> {
                Ok(Amount::Integer(i128::from(v)))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Amount, E> {
                Ok(Amount::Integer(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Amount, E> {
                Ok(i128::try_from(v).map_or_else(|_| Amount::Text(v.to_string()), Amount::Integer))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Amount, E> {
                Ok(Amount::Fraction(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
                Ok(Amount::Text(v.to_owned()))
            }
        }
        deserializer.deserialize_any(AmountVisitor)
    }
}
