//! The pass: `load_soothe::plan_pass` over the index — which waiting loads
//! of the configured data movers to accept now, the ledger write that must
//! come first (exact mode), and why every other waiting load is held. The
//! policy (first in first out, the block carrying over, one ledger write per
//! pass, the accept grace) lives in the `load-soothe` crate, so that
//! `policyctl soothe` shows exactly what this controller does.

use load_soothe::{PassPlan, plan_pass};

use crate::index::GateIndex;

/// What one pass decides: nothing while the node-agent ConfigMap has never
/// been readable.
pub fn plan(index: &GateIndex, now: jiff::Timestamp) -> PassPlan {
    match index.gate() {
        Some(gate) => plan_pass(gate, index.cache(), index.exact_input(), now),
        None => PassPlan::default(),
    }
}
